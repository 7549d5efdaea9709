//! Typed CEL values for string formats, as upstream's CEL type model declares them:
//! `date` and `date-time` strings are timestamps, `duration` strings durations and
//! `byte` strings bytes. A string that does not parse stays a string (schema
//! validation reports it).

use std::sync::Arc;

use chrono::{DateTime, Duration, FixedOffset, NaiveDate};
use kube_cel::cel::Value as Cel;

/// The CEL value of string `s` with schema format `format`.
pub(super) fn typed_string(format: &str, s: &str) -> Cel {
    let typed = match format {
        "date-time" | "datetime" => DateTime::parse_from_rfc3339(s).ok().map(Cel::Timestamp),
        "date" => NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .and_then(|t| t.and_local_timezone(FixedOffset::east_opt(0)?).single())
            .map(Cel::Timestamp),
        "duration" => go_duration(s).map(Cel::Duration),
        "byte" => base64_decode(s).map(|b| Cel::Bytes(Arc::new(b))),
        _ => None,
    };
    typed.unwrap_or_else(|| Cel::String(Arc::new(s.to_string())))
}

/// Go's `time.ParseDuration`: `1h30m`, `-1.5s`, `300ms`, `2us`, `0`.
pub(super) fn go_duration(s: &str) -> Option<Duration> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut total_ns: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total_ns += n * scale;
    }
    if total_ns > i64::MAX as f64 {
        return None;
    }
    let d = Duration::nanoseconds(total_ns.round() as i64);
    Some(if neg { -d } else { d })
}

/// Standard base64 with padding (Go's `base64.StdEncoding`).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    if !super::formats::base64_std(s) {
        return None;
    }
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            _ => 63,
        }
    };
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for chunk in s.as_bytes().chunks(4) {
        let pad = chunk.iter().filter(|c| **c == b'=').count();
        let n = chunk
            .iter()
            .map(|c| if *c == b'=' { 0 } else { val(*c) })
            .fold(0u32, |acc, x| (acc << 6) | x);
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}
