//! Messages whose JSON form is not an object of their fields, each as upstream's
//! custom marshalers: `Time` (RFC 3339, whole seconds; the zero time is an empty
//! message and `null` in JSON), `MicroTime` (RFC 3339 with microseconds),
//! `Duration` (Go duration string ⇄ nanoseconds), `Quantity` (its string),
//! `IntOrString` (`{type, intVal, strVal}` ⇄ a number or a string), raw JSON
//! holders (`RawExtension`, `FieldsV1`, apiextensions `JSON`: bytes ⇄ the JSON
//! value) and `Verbs` (a bare string array).

use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::{format_description::FormatItem, macros::format_description, OffsetDateTime};

use crate::schema::Special;
use crate::wire::{self, put_bytes, put_key, put_varint, Raw, Reader};
use crate::Error;

const MICRO: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");

fn put_int(out: &mut Vec<u8>, tag: u32, n: i64) {
    put_key(out, tag, wire::VARINT);
    put_varint(out, n as u64);
}

fn str_of(v: &Value) -> Result<&str, Error> {
    v.as_str()
        .ok_or_else(|| Error::Malformed(format!("expected a string, got {v}")))
}

pub fn encode(special: Special, v: &Value, out: &mut Vec<u8>) -> Result<(), Error> {
    match special {
        Special::None => unreachable!("not special"),
        Special::Time | Special::MicroTime => {
            let t = OffsetDateTime::parse(str_of(v)?, &Rfc3339)
                .map_err(|e| Error::Malformed(format!("invalid time {v}: {e}")))?;
            put_int(out, 1, t.unix_timestamp());
            let nanos = if special == Special::Time {
                0
            } else {
                t.nanosecond() / 1000 * 1000
            };
            put_int(out, 2, i64::from(nanos));
        }
        Special::Duration => put_int(out, 1, parse_duration(str_of(v)?)?),
        Special::Quantity => put_bytes(out, 1, quantity_string(v)?.as_bytes()),
        Special::IntOrString => match v {
            Value::String(s) => {
                put_int(out, 1, 1);
                put_int(out, 2, 0);
                put_bytes(out, 3, s.as_bytes());
            }
            Value::Number(_) => {
                let n = v
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| Error::Malformed(format!("{v} is not an int32")))?;
                put_int(out, 1, 0);
                put_int(out, 2, i64::from(n));
                put_bytes(out, 3, b"");
            }
            _ => {
                return Err(Error::Malformed(format!(
                    "expected an int or a string, got {v}"
                )))
            }
        },
        Special::RawJson => {
            let raw = serde_json::to_vec(v).expect("JSON values serialize");
            put_bytes(out, 1, &raw);
        }
        Special::Verbs => {
            let items = v
                .as_array()
                .ok_or_else(|| Error::Malformed(format!("expected an array, got {v}")))?;
            for item in items {
                put_bytes(out, 1, str_of(item)?.as_bytes());
            }
        }
    }
    Ok(())
}

/// Quantities are strings; a bare JSON number is accepted as upstream's parser does.
fn quantity_string(v: &Value) -> Result<String, Error> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(Error::Malformed(format!("expected a quantity, got {v}"))),
    }
}

/// The fields of a small message, by tag (last occurrence wins).
fn fields(bytes: &[u8]) -> Result<Vec<(u32, Raw<'_>)>, Error> {
    let mut r = Reader::new(bytes);
    let mut out = Vec::new();
    while !r.done() {
        out.push(r.field()?);
    }
    Ok(out)
}

fn int_field(fs: &[(u32, Raw<'_>)], tag: u32) -> Result<i64, Error> {
    match fs.iter().rev().find(|(t, _)| *t == tag) {
        None => Ok(0),
        Some((_, Raw::Varint(v))) => Ok(*v as i64),
        Some(_) => Err(Error::Malformed(format!("field {tag}: expected a varint"))),
    }
}

fn bytes_field<'a>(fs: &[(u32, Raw<'a>)], tag: u32) -> Result<&'a [u8], Error> {
    match fs.iter().rev().find(|(t, _)| *t == tag) {
        None => Ok(&[]),
        Some((_, Raw::Bytes(b))) => Ok(b),
        Some(_) => Err(Error::Malformed(format!("field {tag}: expected bytes"))),
    }
}

fn utf8(b: &[u8]) -> Result<String, Error> {
    String::from_utf8(b.to_vec()).map_err(|_| Error::Malformed("string is not valid UTF-8".into()))
}

pub fn decode(special: Special, bytes: &[u8]) -> Result<Value, Error> {
    let fs = fields(bytes)?;
    Ok(match special {
        Special::None => unreachable!("not special"),
        Special::Time | Special::MicroTime => {
            if bytes.is_empty() {
                return Ok(Value::Null);
            }
            let secs = int_field(&fs, 1)?;
            let t = OffsetDateTime::from_unix_timestamp(secs)
                .map_err(|e| Error::Malformed(format!("time out of range: {e}")))?;
            let s = if special == Special::Time {
                t.format(&Rfc3339)
            } else {
                let nanos = int_field(&fs, 2)?;
                let nanos = u32::try_from(nanos)
                    .ok()
                    .filter(|n| *n < 1_000_000_000)
                    .ok_or_else(|| Error::Malformed("nanos out of range".into()))?;
                t.replace_nanosecond(nanos / 1000 * 1000)
                    .expect("valid nanos")
                    .format(MICRO)
            };
            Value::String(s.map_err(|e| Error::Malformed(format!("time out of range: {e}")))?)
        }
        Special::Duration => Value::String(format_duration(int_field(&fs, 1)?)),
        Special::Quantity => Value::String(utf8(bytes_field(&fs, 1)?)?),
        Special::IntOrString => match int_field(&fs, 1)? {
            0 => Value::from(int_field(&fs, 2)? as i32),
            1 => Value::String(utf8(bytes_field(&fs, 3)?)?),
            t => return Err(Error::Malformed(format!("IntOrString: unknown type {t}"))),
        },
        Special::RawJson => {
            let raw = bytes_field(&fs, 1)?;
            if raw.is_empty() {
                Value::Null
            } else if raw.starts_with(crate::MAGIC) {
                crate::decode_object(raw, None)?
            } else {
                serde_json::from_slice(raw)
                    .map_err(|e| Error::Malformed(format!("raw data is not JSON: {e}")))?
            }
        }
        Special::Verbs => {
            let mut items = Vec::new();
            for (_, raw) in &fs {
                match raw {
                    Raw::Bytes(b) => items.push(Value::String(utf8(b)?)),
                    _ => return Err(Error::Malformed("verbs: expected strings".into())),
                }
            }
            Value::Array(items)
        }
    })
}

const UNITS: &[(&str, i64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Go's `time.ParseDuration`: `[-]` then one or more `<decimal><unit>`.
pub fn parse_duration(s: &str) -> Result<i64, Error> {
    let bad = || Error::Malformed(format!("time: invalid duration {s:?}"));
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let num: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = UNITS
            .iter()
            .find(|(u, _)| *u == &rest[..unit_len])
            .ok_or_else(bad)?;
        total += num * unit.1 as f64;
        rest = &rest[unit_len..];
    }
    let n = total.round() as i64;
    Ok(if neg { -n } else { n })
}

/// Go's `time.Duration.String`: `1h2m3.5s`, `1.5ms`, `0s`.
pub fn format_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let neg = nanos < 0;
    let n = nanos.unsigned_abs();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if n < 1_000_000_000 {
        let (div, unit) = match n {
            n if n < 1_000 => (1, "ns"),
            n if n < 1_000_000 => (1_000, "µs"),
            _ => (1_000_000, "ms"),
        };
        out.push_str(&fraction(n, div));
        out.push_str(unit);
        return out;
    }
    let h = n / 3_600_000_000_000;
    let m = n / 60_000_000_000 % 60;
    let s = n % 60_000_000_000;
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&fraction(s, 1_000_000_000));
    out.push('s');
    out
}

/// `n / div` with the fractional digits Go prints (trailing zeros trimmed).
fn fraction(n: u64, div: u64) -> String {
    let whole = n / div;
    let frac = n % div;
    if frac == 0 {
        return whole.to_string();
    }
    let width = div.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}
