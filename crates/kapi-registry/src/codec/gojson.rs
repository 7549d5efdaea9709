//! JSON as Go's `encoding/json` writes it (what kube-apiserver stores and
//! serves): compact, keys in the object's order, `<`, `>`, `&`, U+2028 and
//! U+2029 escaped as `\u003c`, `\u003e`, `\u0026`, `\u2028`, `\u2029`, and
//! floats in Go's format (`1e+21`, `1e-7`, otherwise plain decimals).
//!
//! Invariant: the output parses to the same value as serde_json's own output;
//! only the spelling differs.

use serde_json::{Number, Value};

/// `value` as Go writes it.
pub fn to_go_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_go_json(value, &mut out);
    out
}

/// Append `value` as Go writes it to `out`: written directly, one pass over
/// each string (through serde_json's serializer every string was scanned
/// twice, once for JSON's escapes and once for Go's, and written in pieces).
pub fn write_go_json(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_str(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_go_json(v, out);
            }
            out.push(b']');
        }
        Value::Object(m) => {
            out.push(b'{');
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(k, out);
                out.push(b':');
                write_go_json(v, out);
            }
            out.push(b'}');
        }
    }
}

/// Go's spelling for the protobuf walk that writes stored objects' JSON
/// without decoding them (`kapi_protobuf::stored_to_json`).
pub struct GoSpelling;

impl kapi_protobuf::Spelling for GoSpelling {
    fn string(&self, s: &str, out: &mut Vec<u8>) {
        write_str(s, out);
    }

    fn value(&self, v: &Value, out: &mut Vec<u8>) {
        write_go_json(v, out);
    }
}

fn write_number(n: &Number, out: &mut Vec<u8>) {
    if let Some(u) = n.as_u64() {
        out.extend_from_slice(itoa::Buffer::new().format(u).as_bytes());
    } else if let Some(i) = n.as_i64() {
        out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
    } else if let Some(f) = n.as_f64() {
        out.extend_from_slice(go_float(f).as_bytes());
    }
}

/// How many bytes of a string are looked at together for escapes.
const BLOCK: usize = 16;

/// What a byte of a string becomes: itself (0), a two-character escape (the
/// character after the backslash), `\u00XX` (`U`), Go's `\u003c` and kin
/// (`G`), or the first byte of U+2028 / U+2029 (`E`), escaped when those
/// follow. JSON's escapes are serde_json's (`\b`, `\f`, `\n`, `\r`, `\t`,
/// `\"`, `\\`, else `\u00XX`); Go's add `<`, `>`, `&`, U+2028 and U+2029.
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = b'U';
        b += 1;
    }
    t[0x08] = b'b';
    t[0x0c] = b'f';
    t[b'\n' as usize] = b'n';
    t[b'\r' as usize] = b'r';
    t[b'\t' as usize] = b't';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'<' as usize] = b'G';
    t[b'>' as usize] = b'G';
    t[b'&' as usize] = b'G';
    t[0xE2] = b'E';
    t
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether a block holds a byte [`ESCAPE`] has an entry for. Written so that
/// it compiles to a few SIMD compares per block: pairs of characters are
/// folded into one compare (`"` 0x22 and `&` 0x26 differ in bit 2, `<` 0x3C
/// and `>` 0x3E in bit 1). Spelled as seven plain `==` tests, the compiler
/// turned them into a bit-table look-up per byte, about eight instructions a
/// byte (callgrind, issue 26).
fn block_may_need_escape<const N: usize>(block: &[u8; N]) -> bool {
    let mut any = 0u8;
    for &b in block {
        let hit =
            (b < 0x20) | ((b | 0x04) == 0x26) | ((b | 0x02) == 0x3E) | (b == b'\\') | (b == 0xE2);
        any |= hit as u8;
    }
    any != 0
}

/// Whether any byte of `bytes` may need an escape: block by block, the last
/// few bytes padded into a block of their own. Most strings need none and are
/// then copied whole; a short one (a key, a name) costs one block test where
/// the byte-at-a-time walk below costs several instructions a byte.
fn may_need_escape(bytes: &[u8]) -> bool {
    // Long strings (a ConfigMap's value) four blocks at a time: the test's
    // fixed cost is paid once per 64 bytes.
    let mut wide = bytes.chunks_exact(4 * BLOCK);
    if wide
        .by_ref()
        .any(|b| block_may_need_escape::<{ 4 * BLOCK }>(b.try_into().expect("four blocks")))
    {
        return true;
    }
    let mut blocks = wide.remainder().chunks_exact(BLOCK);
    if blocks
        .by_ref()
        .any(|b| block_may_need_escape::<BLOCK>(b.try_into().expect("a block")))
    {
        return true;
    }
    let rest = blocks.remainder();
    if rest.is_empty() {
        return false;
    }
    // A space needs no escape.
    let mut last = [b' '; BLOCK];
    last[..rest.len()].copy_from_slice(rest);
    block_may_need_escape::<BLOCK>(&last)
}

/// `s` quoted and escaped as Go writes it.
fn write_str(s: &str, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if !may_need_escape(bytes) {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Whole blocks without a byte that may need an escape are skipped at
        // once (the test has no early exit, so it vectorizes).
        if let Some(block) = bytes.get(i..i + BLOCK) {
            if !block_may_need_escape::<BLOCK>(block.try_into().expect("a block")) {
                i += BLOCK;
                continue;
            }
        }
        let b = bytes[i];
        let action = ESCAPE[b as usize];
        if action == 0 {
            i += 1;
            continue;
        }
        let mut len = 1;
        out.extend_from_slice(&bytes[start..i]);
        match action {
            b'U' | b'G' => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xF) as usize]);
            }
            // U+2028 and U+2029 are E2 80 A8 / E2 80 A9 in UTF-8.
            b'E' if bytes.get(i + 1) == Some(&0x80)
                && matches!(bytes.get(i + 2), Some(0xA8 | 0xA9)) =>
            {
                out.extend_from_slice(if bytes[i + 2] == 0xA8 {
                    b"\\u2028"
                } else {
                    b"\\u2029"
                });
                len = 3;
            }
            b'E' => out.push(b),
            c => {
                out.push(b'\\');
                out.push(c);
            }
        }
        i += len;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
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

    /// The block test finds every byte the escape table has an entry for,
    /// and only those: each of the 256 byte values at each position of a
    /// block of ordinary bytes.
    #[test]
    fn the_block_test_is_the_table() {
        for at in 0..BLOCK {
            for b in 0..=255u8 {
                for fill in [b'x', 0x21, 0x27, 0x3D, 0x3F, 0x7F, 0x80, 0xE3, 0xFF] {
                    let mut block = [fill; BLOCK];
                    block[at] = b;
                    let want = block.iter().any(|&c| ESCAPE[c as usize] != 0);
                    assert_eq!(
                        block_may_need_escape(&block),
                        want,
                        "{b:#x} at {at} in {fill:#x}"
                    );
                }
            }
        }
    }

    /// The whole-string test agrees with the table for strings of every
    /// length up to six blocks (past one four-block step), with the byte
    /// anywhere.
    #[test]
    fn the_string_test_is_the_table() {
        for len in 0..=6 * BLOCK {
            for at in 0..len {
                for b in [
                    0x00, 0x1F, b'"', b'\\', b'<', b'>', b'&', 0xE2, b' ', b'x', 0xC3,
                ] {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    let want = bytes.iter().any(|&c| ESCAPE[c as usize] != 0);
                    assert_eq!(may_need_escape(&bytes), want, "{b:#x} at {at} of {len}");
                }
            }
            assert!(!may_need_escape(&vec![b'a'; len]));
        }
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
                    write_str(&s, &mut out);
                    assert_eq!(String::from_utf8(out).unwrap(), slowly(&json!(s)), "{s:?}");
                }
            }
        }
    }

    /// Go's spelling the slow way: serde_json's JSON, then the
    /// character-at-a-time escaper of `last-applied-configuration` over it,
    /// with floats in Go's format.
    fn slowly(v: &Value) -> String {
        let go_escaped =
            |v: &Value| crate::managed::lastapplied::go_escape(&serde_json::to_string(v).unwrap());
        match v {
            Value::Number(n) if n.is_f64() => go_float(n.as_f64().unwrap()),
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(slowly).collect();
                format!("[{}]", items.join(","))
            }
            Value::Object(m) => {
                let members: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{}:{}", go_escaped(&json!(k)), slowly(v)))
                    .collect();
                format!("{{{}}}", members.join(","))
            }
            v => go_escaped(v),
        }
    }

    /// The direct writer spells every value as the slow way does: every
    /// ASCII byte and a few multi-byte characters at the edges of the blocks
    /// scanned together, numbers at the limits of each kind, nesting and
    /// empty containers.
    #[test]
    fn the_direct_writer_writes_what_the_slow_way_writes() {
        let mut strings: Vec<String> = (0u8..0x80).map(|b| (b as char).to_string()).collect();
        for sp in [
            "\u{2028}", "\u{2029}", "\u{2027}", "\u{e2}", "é", "€", "😀", "\u{7f}",
        ] {
            for len in [0, 14, 15, 16, 17, 40] {
                for at in [0, len / 2, len] {
                    let mut s = "ab<c".repeat(len / 4) + &"x".repeat(len % 4);
                    s.insert_str(at.min(s.len()), sp);
                    strings.push(s);
                }
            }
        }
        strings.push("\u{1}\u{1f}\"\\\u{8}\u{c}\n\r\t<>&".repeat(5));
        let numbers = [
            json!(0),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(-1),
            json!(1.5),
            json!(-0.0),
            json!(1e21),
            json!(1e-7),
            json!(123456789.125),
            json!(f64::MAX),
            json!(f64::MIN_POSITIVE),
        ];
        let mut values: Vec<Value> = strings.iter().map(|s| json!(s)).collect();
        values.extend(numbers.iter().cloned());
        values.extend([json!(null), json!(true), json!(false), json!({}), json!([])]);
        let nested = json!({
            "a": strings.iter().take(40).cloned().collect::<Vec<_>>(),
            "<key>": {"n": numbers.to_vec(), "e": {}, "l": [[], [{}], null]},
            "\u{2028}": [true, false, null, "x"],
        });
        values.push(nested);
        for v in &values {
            assert_eq!(
                String::from_utf8(to_go_json(v)).unwrap(),
                slowly(v),
                "{v:?}"
            );
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
