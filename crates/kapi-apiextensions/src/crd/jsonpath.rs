//! The JSONPath subset printer columns and scale paths use (kubectl's template
//! syntax without the braces): `.a.b`, `.a[0]`, `.a[*].b`, `['dotted.key']`
//! and filters `[?(@.type=="Ready")]`. Evaluation never fails: a missing key
//! gives no result, as upstream's `AllowMissingKeys(true)`.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
    All,
    /// `[?(@.path=="value")]` (or `!=`).
    Filter(Vec<String>, bool, Value),
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath(Vec<Step>);

impl JsonPath {
    pub fn parse(src: &str) -> Result<JsonPath, String> {
        let s = src.trim();
        let s = s
            .strip_prefix('{')
            .and_then(|r| r.strip_suffix('}'))
            .unwrap_or(s);
        let s = s.strip_prefix('$').unwrap_or(s);
        let mut steps = Vec::new();
        let mut rest = s;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('.') {
                let end = r.find(['.', '[']).unwrap_or(r.len());
                if end == 0 {
                    return Err(format!("unrecognized column definition {src:?}"));
                }
                steps.push(Step::Key(r[..end].to_owned()));
                rest = &r[end..];
            } else if let Some(r) = rest.strip_prefix('[') {
                let end = r
                    .find(']')
                    .ok_or_else(|| format!("unterminated [ in {src:?}"))?;
                let inner = r[..end].trim();
                steps.push(
                    bracket(inner)
                        .ok_or_else(|| format!("unrecognized column definition {src:?}"))?,
                );
                rest = &r[end + 1..];
            } else {
                return Err(format!("unrecognized column definition {src:?}"));
            }
        }
        Ok(JsonPath(steps))
    }

    /// Every value the path selects in `obj`.
    pub fn find<'a>(&self, obj: &'a Value) -> Vec<&'a Value> {
        let mut current = vec![obj];
        for step in &self.0 {
            let mut next = Vec::new();
            for v in current {
                match step {
                    Step::Key(k) => next.extend(v.get(k.as_str())),
                    Step::Index(i) => next.extend(v.get(*i)),
                    Step::All => match v {
                        Value::Array(items) => next.extend(items.iter()),
                        Value::Object(m) => next.extend(m.values()),
                        _ => {}
                    },
                    Step::Filter(path, equal, want) => {
                        if let Value::Array(items) = v {
                            next.extend(items.iter().filter(|item| {
                                let got = path.iter().try_fold(*item, |x, k| x.get(k.as_str()));
                                (got == Some(want)) == *equal
                            }));
                        }
                    }
                }
            }
            current = next;
        }
        current
    }

    /// The path as a JSON pointer, when it is a plain chain of keys.
    pub fn pointer(&self) -> Option<String> {
        let mut out = String::new();
        for step in &self.0 {
            let Step::Key(k) = step else { return None };
            out.push('/');
            out.push_str(&k.replace('~', "~0").replace('/', "~1"));
        }
        Some(out)
    }
}

fn bracket(inner: &str) -> Option<Step> {
    if inner == "*" {
        return Some(Step::All);
    }
    if let Ok(i) = inner.parse::<usize>() {
        return Some(Step::Index(i));
    }
    for q in ['\'', '"'] {
        if let Some(k) = inner.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return Some(Step::Key(k.to_owned()));
        }
    }
    let expr = inner.strip_prefix("?(")?.strip_suffix(')')?.trim();
    let (lhs, rhs, equal) = match expr.split_once("==") {
        Some((l, r)) => (l, r, true),
        None => {
            let (l, r) = expr.split_once("!=")?;
            (l, r, false)
        }
    };
    let path: Vec<String> = lhs
        .trim()
        .strip_prefix("@.")?
        .split('.')
        .map(str::to_owned)
        .collect();
    let rhs = rhs.trim();
    let want = match rhs
        .strip_prefix(['"', '\''])
        .and_then(|r| r.strip_suffix(['"', '\'']))
    {
        Some(s) => Value::String(s.to_owned()),
        None => serde_json::from_str(rhs).ok()?,
    };
    Some(Step::Filter(path, equal, want))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_indexes_filters() {
        let obj = json!({"spec": {"a": [1, 2]}, "status": {"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "Other", "status": "False"}]},
            "metadata": {"labels": {"app.kubernetes.io/name": "x"}}});
        let find = |p: &str| {
            JsonPath::parse(p)
                .unwrap()
                .find(&obj)
                .into_iter()
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(find(".spec.a[1]"), vec![json!(2)]);
        assert_eq!(find(".spec.a[*]"), vec![json!(1), json!(2)]);
        assert_eq!(
            find(".status.conditions[?(@.type==\"Ready\")].status"),
            vec![json!("True")]
        );
        assert_eq!(
            find(".metadata.labels['app.kubernetes.io/name']"),
            vec![json!("x")]
        );
        assert!(find(".spec.missing.deeper").is_empty());
        assert_eq!(
            JsonPath::parse(".spec.replicas")
                .unwrap()
                .pointer()
                .unwrap(),
            "/spec/replicas"
        );
        assert!(JsonPath::parse("spec").is_err());
    }
}
