//! List: a consistent, paged read at one revision, filtered by label and field
//! selectors, with upstream's `resourceVersion` / `resourceVersionMatch` rules and
//! continue tokens (base64 JSON of the revision and the next key, as upstream).
//! With selectors, pages are read from storage until `limit` objects match.

use base64::Engine;
use kapi_machinery::status::ApiError;
use kapi_storage::{ListOptions as BackendList, StorageError};
use serde_json::{json, Value};

use super::options::{ListOptions, RvMatch};
use super::{parse_rv, Store};
use crate::meta;
use crate::resource::ResourceDef;

/// A list page.
#[derive(Debug, Clone, Default)]
pub struct ListResult {
    pub items: Vec<Value>,
    pub resource_version: String,
    pub continue_token: Option<String>,
    pub remaining: Option<i64>,
}

const TOKEN_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

pub(crate) fn encode_token(rv: i64, start: &str) -> String {
    let body = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start});
    base64::engine::general_purpose::STANDARD.encode(body.to_string())
}

/// A continue token, refused in upstream's words (`invalid continue token:
/// continue key is not valid: ...`). Tokens are base64 (kapi's own, padded)
/// or unpadded URL base64 (upstream's) of `{"v", "rv", "start"}`.
pub(crate) fn decode_token(token: &str) -> Result<(i64, String), ApiError> {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let bad = |why: String| {
        ApiError::bad_request(format!(
            "invalid continue token: continue key is not valid: {why}"
        ))
    };
    let raw = match STANDARD.decode(token) {
        Ok(raw) => raw,
        Err(_) => URL_SAFE_NO_PAD.decode(token).map_err(|e| {
            let at = match e {
                base64::DecodeError::InvalidByte(at, _)
                | base64::DecodeError::InvalidLastSymbol(at, _) => at,
                _ => token.len(),
            };
            bad(format!("illegal base64 data at input byte {at}"))
        })?,
    };
    let v: Value = serde_json::from_slice(&raw)
        .map_err(|e| bad(kapi_machinery::gojson::syntax_error(&e, &raw)))?;
    let wrong_version =
        || bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1 required)".into());
    if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(wrong_version());
    }
    let rv = v
        .get("rv")
        .and_then(Value::as_i64)
        .ok_or_else(wrong_version)?;
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(wrong_version)?;
    if start.contains("..") || start.starts_with('/') {
        return Err(bad("continue key must not contain path segments".into()));
    }
    Ok((rv, start.to_owned()))
}

impl Store {
    pub async fn list(
        &self,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ListResult, ApiError> {
        if let Some(c) = self.list_cached(namespace, opts).await? {
            return Ok(ListResult {
                items: self.decode_all(c.items.iter().map(|o| &o.kv))?,
                resource_version: c.resource_version,
                continue_token: c.continue_token,
                remaining: c.remaining,
            });
        }
        let prefix = self.def.list_prefix(namespace);
        let (mut revision, mut start) = (None, None);
        if let Some(token) = opts.continue_token.as_deref().filter(|t| !t.is_empty()) {
            let (rv, key) = decode_token(token)?;
            revision = Some(rv);
            start = Some(format!("{prefix}{key}"));
        } else {
            revision = self.list_revision(opts).await?.or(revision);
        }
        let filtered = !opts.label.is_empty() || !opts.field.is_empty();
        let mut out = ListResult::default();
        loop {
            let req = BackendList {
                revision,
                limit: if opts.limit == 0 {
                    0
                } else {
                    opts.limit.max(1)
                },
                continue_from: start.clone(),
                // A filtered list reports no remainingItemCount.
                skip_count: filtered,
            };
            let page = self.backend.list(&prefix, req).await.map_err(|e| match e {
                StorageError::Compacted { .. } if opts.continue_token.is_some() => {
                    ApiError::resource_expired(TOKEN_EXPIRED)
                }
                e => self.storage_error(e, ""),
            })?;
            revision = Some(page.revision);
            // As upstream, a page never holds more than `limit` objects: reading
            // stops at the limit-th match and the next page starts after it.
            let mut last_key = None;
            let mut more = page.more;
            // One batch, so a conversion webhook gets one review per page.
            let objs = self.decode_all(&page.kvs)?;
            for (kv, obj) in page.kvs.iter().zip(objs) {
                if opts.limit > 0 && out.items.len() >= opts.limit {
                    more = true;
                    break;
                }
                if self.matches(&obj, opts) {
                    out.items.push(obj);
                }
                last_key = Some(kv.key.clone());
            }
            let full = opts.limit > 0 && out.items.len() >= opts.limit;
            match last_key {
                Some(last) if more => {
                    if full || !filtered {
                        let next = format!("{last}\0");
                        let rel = next.strip_prefix(&prefix).unwrap_or(&next).to_owned();
                        out.continue_token = Some(encode_token(page.revision, &rel));
                        out.remaining = (!filtered).then_some(page.remaining);
                        break;
                    }
                    start = Some(format!("{last}\0"));
                }
                _ => break,
            }
        }
        out.resource_version = revision.unwrap_or(0).to_string();
        Ok(out)
    }

    /// The revision a list reads at: `None` for the current one.
    async fn list_revision(&self, opts: &ListOptions) -> Result<Option<i64>, ApiError> {
        let rv = match opts.resource_version.as_deref() {
            None | Some("") => {
                if opts.rv_match != RvMatch::Unset {
                    return Err(ApiError::bad_request(
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    ));
                }
                return Ok(None);
            }
            Some(rv) => parse_rv(rv)?,
        };
        match opts.rv_match {
            RvMatch::Exact if rv == 0 => Err(ApiError::bad_request(
                "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"",
            )),
            RvMatch::Exact => Ok(Some(rv)),
            RvMatch::Unset | RvMatch::NotOlderThan => {
                self.wait_for_revision(rv).await?;
                Ok(None)
            }
        }
    }

    /// Not-older-than reads: wait (briefly) until storage has seen `rv`.
    pub(crate) async fn wait_for_revision(&self, rv: i64) -> Result<(), ApiError> {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(3);
        loop {
            let current = self
                .backend
                .current_revision()
                .await
                .map_err(|e| self.storage_error(e, ""))?;
            if current >= rv {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ApiError::timeout(
                    format!("Too large resource version: {rv}, current: {current}"),
                    1,
                ));
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Whether `obj` passes the list's label and field selectors.
    pub fn matches(&self, obj: &Value, opts: &ListOptions) -> bool {
        opts.label.matches_object(obj) && opts.field.matches(|field| self.field_value(obj, field))
    }

    pub fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        field_value(&self.def, obj, field)
    }

    /// Reject field selectors on fields this resource does not support.
    pub fn check_field_selector(
        &self,
        field: &kapi_machinery::fields::FieldSelector,
    ) -> Result<(), ApiError> {
        let extra = self.def.strategy.selectable_field_names();
        let mut supported = vec!["metadata.name", "metadata.namespace"];
        supported.extend(extra.iter().map(String::as_str));
        let unknown = field
            .requirements()
            .find(|t| !supported.contains(&t.field.as_str()));
        match unknown {
            None => Ok(()),
            Some(t) => Err(ApiError::bad_request(
                self.def.strategy.field_label_error(&t.field),
            )),
        }
    }
}

/// The value of the selectable `field` of `obj`, a `def` object.
pub(crate) fn field_value(def: &ResourceDef, obj: &Value, field: &str) -> Option<String> {
    match field {
        "metadata.name" => Some(meta::name(obj).to_owned()),
        "metadata.namespace" => Some(meta::namespace(obj).unwrap_or("").to_owned()),
        f => def.strategy.field_value(obj, f),
    }
}
