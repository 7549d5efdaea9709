//! YAML as upstream writes it: its serializer marshals JSON, reads it back
//! as a generic YAML value and encodes that, so every mapping comes out with
//! its keys in the YAML encoder's order — not the object's field order.
//! That order is "natural": keys compare character by character, a run of
//! digits compares as a number (`a9` before `a10`), and at the first
//! difference a non-letter sorts before a letter unless a digit preceded it.
//! Used for objects kept in storage as YAML and for YAML answers.

use std::cmp::Ordering;

use serde_json::Value;

/// `value` as YAML, every mapping's keys in Go's YAML encoder order.
pub fn to_go_yaml(value: &Value) -> Result<String, serde_saphyr::SerializeError> {
    serde_saphyr::to_string(&Sorted(value))
}

/// Go's YAML key order ([`key_less`]) as an ordering.
fn key_order(a: &str, b: &str) -> Ordering {
    if key_less(a, b) {
        Ordering::Less
    } else if key_less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

/// Whether string key `a` sorts before `b` in Go's YAML encoder.
fn key_less(a: &str, b: &str) -> bool {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let digit = |c: char| c.is_ascii_digit();
    // Whether the characters compared so far ended in a digit.
    let mut digits = false;
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            digits = digit(ar[i]);
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            // A letter and not: the letter first after a digit, else last.
            return if digits { al } else { bl };
        }
        // Two non-letters: the digit runs from here compare as numbers. A
        // run with leading zeros inside a number that started with another
        // digit counts as that number continuing (both start from 1).
        let inside_number = (ar[i] == '0' || br[i] == '0')
            && ar[..i]
                .iter()
                .rev()
                .take_while(|c| digit(**c))
                .any(|c| *c != '0');
        let start = i64::from(inside_number);
        let (an, ai) = digit_run(&ar, i, start);
        let (bn, bi) = digit_run(&br, i, start);
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// The number the run of ASCII digits of `chars` from `i` makes, continuing
/// `start` (Go's int64 arithmetic, wrapping), and where the run ends.
fn digit_run(chars: &[char], mut i: usize, start: i64) -> (i64, usize) {
    let mut n = start;
    while let Some(d) = chars
        .get(i)
        .filter(|c| c.is_ascii_digit())
        .and_then(|c| c.to_digit(10))
    {
        n = n.wrapping_mul(10).wrapping_add(i64::from(d));
        i += 1;
    }
    (n, i)
}

/// A JSON value serialized with every object's keys in [`key_order`].
struct Sorted<'a>(&'a Value);

impl serde::Serialize for Sorted<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.0 {
            Value::Object(o) => {
                let mut members: Vec<(&String, &Value)> = o.iter().collect();
                members.sort_by(|a, b| key_order(a.0, b.0));
                let mut map = s.serialize_map(Some(members.len()))?;
                for (k, v) in members {
                    map.serialize_entry(k, &Sorted(v))?;
                }
                map.end()
            }
            Value::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(&Sorted(v))?;
                }
                seq.end()
            }
            v => v.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sorted(keys: &[&str]) -> Vec<String> {
        let mut k: Vec<&str> = keys.to_vec();
        k.sort_by(|a, b| key_order(a, b));
        k.into_iter().map(str::to_owned).collect()
    }

    #[test]
    fn keys_sort_as_go_yaml_sorts_them() {
        // Plain words: by code point, a prefix first.
        assert_eq!(
            sorted(&["metadata", "kind", "apiVersion", "data", "spec", "status"]),
            ["apiVersion", "data", "kind", "metadata", "spec", "status"]
        );
        assert_eq!(sorted(&["ab", "a", "abc"]), ["a", "ab", "abc"]);
        // Digit runs as numbers.
        assert_eq!(sorted(&["a10", "a9", "a1"]), ["a1", "a9", "a10"]);
        assert_eq!(sorted(&["x-10-y", "x-2-y"]), ["x-2-y", "x-10-y"]);
        // Equal numbers: the shorter run first.
        assert_eq!(sorted(&["a01", "a1"]), ["a1", "a01"]);
        // A non-letter before a letter, unless right after a digit.
        assert_eq!(sorted(&["ab", "a.b", "a-b"]), ["a-b", "a.b", "ab"]);
        assert_eq!(sorted(&["1a", "1.a"]), ["1a", "1.a"]);
        // Upper case before lower case (code points).
        assert_eq!(sorted(&["b", "B", "a", "A"]), ["A", "B", "a", "b"]);
        // managedFields' keys.
        assert_eq!(
            sorted(&["f:data", "f:metadata", ".", "f:binaryData"]),
            [".", "f:binaryData", "f:data", "f:metadata"]
        );
    }

    #[test]
    fn every_mapping_is_written_in_that_order() {
        let v = json!({"kind": "ConfigMap", "apiVersion": "v1",
                       "metadata": {"name": "a", "labels": {"z": "1", "a10": "2", "a9": "3"}},
                       "data": {"k": "v"}, "items": [{"b": 1, "a": 2}]});
        let yaml = to_go_yaml(&v).unwrap();
        let keys: Vec<&str> = yaml
            .lines()
            .map(|l| l.trim_start().trim_start_matches("- "))
            .filter_map(|l| l.split_once(':').map(|(k, _)| k))
            .collect();
        assert_eq!(
            keys,
            [
                "apiVersion",
                "data",
                "k",
                "items",
                "a",
                "b",
                "kind",
                "metadata",
                "labels",
                "a9",
                "a10",
                "z",
                "name"
            ]
        );
    }
}
