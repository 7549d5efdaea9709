//! Key ranges of the cache's ordered map: the end of a prefix's range, and the
//! merge of the current objects with a list's overlay of older values.

use std::sync::Arc;

use super::object::CachedObject;

/// The least string above every string that starts with `prefix`, when its
/// last byte is ASCII below DEL (keys' prefixes end in `/`).
pub(super) fn prefix_end(prefix: &str) -> Option<String> {
    let last = *prefix.as_bytes().last()?;
    if last >= 0x7f {
        return None;
    }
    let mut end = prefix[..prefix.len() - 1].to_owned();
    end.push(char::from(last + 1));
    Some(end)
}

/// Merge two key-ordered sequences; the second wins on equal keys; `None` values drop out.
pub(super) fn merge<'a, A, B>(a: A, b: B) -> impl Iterator<Item = &'a Arc<CachedObject>>
where
    A: Iterator<Item = (&'a str, Option<&'a Arc<CachedObject>>)>,
    B: Iterator<Item = (&'a str, Option<&'a Arc<CachedObject>>)>,
{
    let mut a = a.peekable();
    let mut b = b.peekable();
    std::iter::from_fn(move || loop {
        let next = match (a.peek(), b.peek()) {
            (None, None) => return None,
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (Some((ka, _)), Some((kb, _))) => match ka.cmp(kb) {
                std::cmp::Ordering::Less => a.next(),
                std::cmp::Ordering::Greater => b.next(),
                std::cmp::Ordering::Equal => {
                    a.next();
                    b.next()
                }
            },
        };
        if let Some((_, Some(v))) = next {
            return Some(v);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_bounds_exactly_the_keys_under_the_prefix() {
        let end = prefix_end("/registry/configmaps/s/").unwrap();
        assert_eq!(end, "/registry/configmaps/s0");
        for under in [
            "/registry/configmaps/s/",
            "/registry/configmaps/s/a",
            "/registry/configmaps/s/\u{10ffff}",
        ] {
            assert!(under < end.as_str(), "{under}");
        }
        for past in [
            "/registry/configmaps/s0",
            "/registry/configmaps/sa",
            "/registry/configmaps/t/",
        ] {
            assert!(past >= end.as_str(), "{past}");
        }
        assert!("/registry/configmaps/s" < end.as_str());
        assert_eq!(prefix_end(""), None);
        assert_eq!(prefix_end("a\u{7f}"), None);
    }
}
