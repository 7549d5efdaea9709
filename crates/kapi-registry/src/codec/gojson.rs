//! JSON as Go's `encoding/json` writes it (what kube-apiserver stores and
//! serves): compact, keys in the object's order, `<`, `>`, `&`, U+2028 and
//! U+2029 escaped as `\u003c`, `\u003e`, `\u0026`, `\u2028`, `\u2029`, and
//! floats in Go's format (`1e+21`, `1e-7`, otherwise plain decimals).
//!
//! Invariant: the output parses to the same value as serde_json's own output;
//! only the spelling differs.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::Formatter;
use serde_json::Value;

/// `value` as Go writes it.
pub fn to_go_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_go_json(value, &mut out);
    out
}

/// Append `value` as Go writes it to `out`.
pub fn write_go_json(value: &Value, out: &mut Vec<u8>) {
    let mut ser = serde_json::Serializer::with_formatter(out, GoFormatter);
    value
        .serialize(&mut ser)
        .expect("JSON values serialize into memory");
}

/// How many bytes of a string are looked at together for escapes.
const BLOCK: usize = 16;

/// Whether Go escapes a string at byte `b` (`<`, `>`, `&`, or the first byte
/// of U+2028 / U+2029).
fn may_escape(b: u8) -> bool {
    matches!(b, b'<' | b'>' | b'&' | 0xE2)
}

/// serde_json's compact output (the trait's defaults) but for strings and floats.
struct GoFormatter;

impl Formatter for GoFormatter {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let bytes = fragment.as_bytes();
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            // Whole blocks without a byte that may start an escape are
            // skipped at once (the test has no early exit, so it vectorizes).
            if let Some(block) = bytes.get(i..i + BLOCK) {
                if !block.iter().fold(false, |any, b| any | may_escape(*b)) {
                    i += BLOCK;
                    continue;
                }
            }
            let (escape, len): (&[u8], usize) = match bytes[i] {
                b'<' => (b"\\u003c", 1),
                b'>' => (b"\\u003e", 1),
                b'&' => (b"\\u0026", 1),
                // U+2028 and U+2029 are E2 80 A8 / E2 80 A9 in UTF-8.
                0xE2 if bytes.get(i + 1) == Some(&0x80) && bytes.get(i + 2) == Some(&0xA8) => {
                    (b"\\u2028", 3)
                }
                0xE2 if bytes.get(i + 1) == Some(&0x80) && bytes.get(i + 2) == Some(&0xA9) => {
                    (b"\\u2029", 3)
                }
                _ => {
                    i += 1;
                    continue;
                }
            };
            writer.write_all(&bytes[start..i])?;
            writer.write_all(escape)?;
            i += len;
            start = i;
        }
        writer.write_all(&bytes[start..])
    }

    fn write_f64<W: ?Sized + Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(go_float(value).as_bytes())
    }

    fn write_f32<W: ?Sized + Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(writer, f64::from(value))
    }
}

/// Go's `encoding/json` spelling of a float64: the shortest digits that read
/// back, plain between 1e-6 and 1e21, else an exponent (`1e+21`, `1.5e-7`).
fn go_float(v: f64) -> String {
    let abs = v.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        return format!("{v}");
    }
    let e = format!("{v:e}");
    match e.split_once('e') {
        Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
        _ => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_as_go_does() {
        let v = json!({"a": "<b>&\u{2028}\u{2029}é\"\\\n", "n": [1, -2, 1.5]});
        let out = String::from_utf8(to_go_json(&v)).unwrap();
        assert_eq!(
            out,
            r#"{"a":"\u003cb\u003e\u0026\u2028\u2029é\"\\\n","n":[1,-2,1.5]}"#
        );
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), v);
    }

    #[test]
    fn escapes_land_anywhere_in_a_long_string() {
        let specials = [
            "<", ">", "&", "\u{2028}", "\u{2029}", "\u{2027}", "é", "\u{e000}",
        ];
        for len in [0, 1, 15, 16, 17, 31, 32, 33, 100] {
            for at in 0..=len {
                for sp in specials {
                    let mut s = "x".repeat(len);
                    s.insert_str(at, sp);
                    let mut out = Vec::new();
                    GoFormatter.write_string_fragment(&mut out, &s).unwrap();
                    // The character-at-a-time escaper of `last-applied-configuration`.
                    let slowly = crate::managed::lastapplied::go_escape(&s);
                    assert_eq!(String::from_utf8(out).unwrap(), slowly, "{s:?}");
                }
            }
        }
    }

    #[test]
    fn floats_as_go_writes_them() {
        for (v, go) in [
            (1e21, "1e+21"),
            (1.5e22, "1.5e+22"),
            (1e-7, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (0.000001, "0.000001"),
            (123456789.5, "123456789.5"),
            (0.0, "0"),
            (-2.5, "-2.5"),
        ] {
            assert_eq!(go_float(v), go, "{v}");
        }
    }
}
