//! Decoding the API server's own configuration files
//! (`AuthenticationConfiguration`, `AuthorizationConfiguration`, and the
//! binary's `TracingConfiguration`) as upstream's
//! strict decoder does: YAML or JSON, `apiVersion` and `kind` checked against
//! the versions served, and a field the type does not have refused with its
//! path (`strict decoding error: unknown field "jwt[0].issuer.foo"`). A
//! wrongly typed field is refused naming its path as well.
//!
//! The group's versions share one schema here (upstream converts them to one
//! internal type), so one Rust type decodes them all. [`poll_while_alive`]
//! is how a file that reloads is watched.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The group of these configuration kinds.
pub const GROUP: &str = "apiserver.config.k8s.io";

/// Decode `data` as `kind` of [`GROUP`] at one of `versions`.
pub fn decode<T: DeserializeOwned>(data: &str, kind: &str, versions: &[&str]) -> Result<T, String> {
    if data.trim().is_empty() {
        return Err("empty config data".into());
    }
    let mut doc: Value = serde_saphyr::from_str(data).map_err(|e| format!("{e}"))?;
    let obj = doc
        .as_object_mut()
        .ok_or("couldn't get version/kind; json parse error: not an object")?;
    kapi_machinery::config_file::check_type(obj, GROUP, kind, versions, false)?;
    serde_path_to_error::deserialize(doc).map_err(|e| {
        let path = e.path().to_string();
        kapi_machinery::config_file::strict_error(&path, &e.into_inner().to_string())
    })
}

/// A field that may be `null` in the file (Go decodes null as the zero value).
pub fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

/// Go's `metav1.Duration`: a Go duration string (`5m`, `1m30s`, `500ms`).
pub fn duration<'de, D>(d: D) -> Result<Option<std::time::Duration>, D::Error>
where
    D: Deserializer<'de>,
{
    let s = Option::<String>::deserialize(d)?;
    match s {
        None => Ok(None),
        Some(s) => parse_go_duration(&s)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// Parse a Go duration (`1h2m3.5s`, `300ms`, `0`) with
/// [`kapi_http::limits::parse_go_duration`]; negative ones are refused.
pub fn parse_go_duration(s: &str) -> Result<std::time::Duration, String> {
    match kapi_http::limits::parse_go_duration(s)? {
        (true, d) if !d.is_zero() => Err(format!("time: invalid duration {s:?}")),
        (_, d) => Ok(d),
    }
}

/// Call `reload` on `me` every `every` for as long as it lives (the task
/// holds only a weak reference: dropping the object ends the polling).
/// Without a runtime (a synchronous caller) nothing is polled.
pub fn poll_while_alive<T, F, Fut>(me: &std::sync::Arc<T>, every: std::time::Duration, reload: F)
where
    T: Send + Sync + 'static,
    F: Fn(std::sync::Arc<T>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let weak = std::sync::Arc::downgrade(me);
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        rt.spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(me) = weak.upgrade() else { return };
                reload(me).await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, Default)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Doc {
        #[serde(default, deserialize_with = "nullable")]
        items: Vec<Item>,
    }

    #[derive(Debug, Deserialize, Default)]
    #[serde(deny_unknown_fields)]
    struct Item {
        #[serde(default)]
        name: String,
    }

    #[test]
    fn strict_decoding_names_the_field() {
        let ok: Doc = decode(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: K\nitems: [{name: a}]\n",
            "K",
            &["v1"],
        )
        .unwrap();
        assert_eq!(ok.items[0].name, "a");
        let null: Doc = decode(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: K\nitems:\n",
            "K",
            &["v1"],
        )
        .unwrap();
        assert!(null.items.is_empty());
        let e = decode::<Doc>(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: K\nitems: [{name: a, foo: 1}]\n",
            "K",
            &["v1"],
        )
        .unwrap_err();
        assert_eq!(e, "strict decoding error: unknown field \"items[0].foo\"");
        let e = decode::<Doc>(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: K\nbar: 1\n",
            "K",
            &["v1"],
        )
        .unwrap_err();
        assert_eq!(e, "strict decoding error: unknown field \"bar\"");
        let e = decode::<Doc>(
            "apiVersion: apiserver.config.k8s.io/v2\nkind: K\n",
            "K",
            &["v1"],
        )
        .unwrap_err();
        assert!(
            e.starts_with("no kind \"K\" is registered for version"),
            "{e}"
        );
        let e = decode::<Doc>("kind: K\n", "K", &["v1"]).unwrap_err();
        assert!(e.contains("apiVersion"), "{e}");
        let e = decode::<Doc>(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: K\nitems: [{name: [1]}]\n",
            "K",
            &["v1"],
        )
        .unwrap_err();
        assert!(e.starts_with("items[0].name: invalid type"), "{e}");
        assert_eq!(
            decode::<Doc>("  \n", "K", &["v1"]).unwrap_err(),
            "empty config data"
        );
    }

    #[test]
    fn go_durations() {
        use std::time::Duration;
        assert_eq!(parse_go_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_go_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(
            parse_go_duration("500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(parse_go_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_go_duration("5").is_err());
        assert!(parse_go_duration("-5s").is_err());
        assert!(parse_go_duration("").is_err());
    }
}
