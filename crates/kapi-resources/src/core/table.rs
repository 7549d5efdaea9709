//! Table-printing helpers shared by every built-in kind: upstream's `HumanDuration`, the
//! `AGE` cell (`translateTimestampSince`), RFC 3339 parsing, and the column definitions
//! every table starts or ends with.
//!
//! Invariants: cells are computed against the wall clock at call time, as upstream's
//! server-side printers do; a missing or unparsable timestamp prints `<unknown>`.
//!
//! Where to look next: each kind's `columns()` / `cells()` in its own module;
//! `pod_table.rs` for the most involved one.

use kapi_registry::Column;
use serde_json::Value;

/// `metav1.ObjectMeta` doc of `name`, the NAME column description upstream.
pub const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// `metav1.ObjectMeta` doc of `creationTimestamp`, the AGE column description upstream.
pub const AGE_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

pub const CONTAINERS_DOC: &str = "Names of each container in the template.";
pub const IMAGES_DOC: &str = "Images referenced by each container in the template.";

/// The NAME column.
pub const fn name_column() -> Column {
    Column::new("Name", "string", NAME_DOC).format("name")
}

/// The AGE column (a string cell such as `5m`, as upstream).
pub const fn age_column() -> Column {
    Column::new("Age", "string", AGE_DOC)
}

/// A string column.
pub const fn string_column(name: &'static str, description: &'static str) -> Column {
    Column::new(name, "string", description)
}

/// An integer column.
pub const fn int_column(name: &'static str, description: &'static str) -> Column {
    Column::new(name, "integer", description)
}

/// Upstream `duration.HumanDuration` for a whole number of seconds (negative means in
/// the future; up to one second of clock skew prints `0s`).
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    human_hours(seconds)
}

fn human_hours(seconds: i64) -> String {
    let hours = seconds / 3600;
    if hours < 8 {
        let m = (seconds / 60) % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Seconds since the Unix epoch, now.
pub fn now_unix() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

/// Parses an RFC 3339 timestamp (`2024-01-02T03:04:05Z`, optional fraction, `Z` or
/// `±hh:mm`) to whole seconds since the Unix epoch (fractions truncated).
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &frac[digits..];
    }
    let offset = parse_offset(rest)?;
    let days = days_from_civil(year, month, day);
    Some(days * 86_400 + hour * 3600 + min * 60 + sec - offset)
}

fn parse_offset(rest: &str) -> Option<i64> {
    if rest == "Z" || rest == "z" {
        return Some(0);
    }
    let b = rest.as_bytes();
    if b.len() != 6 || b[3] != b':' {
        return None;
    }
    let sign = match b[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let h: i64 = rest.get(1..3)?.parse().ok()?;
    let m: i64 = rest.get(4..6)?.parse().ok()?;
    Some(sign * (h * 3600 + m * 60))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Upstream `translateTimestampSince` on the timestamp at `ptr`.
pub fn since(obj: &Value, ptr: &str) -> String {
    since_at(obj, ptr, now_unix())
}

/// [`since`] against a fixed clock (for tests).
pub fn since_at(obj: &Value, ptr: &str, now: i64) -> String {
    match obj
        .pointer(ptr)
        .and_then(Value::as_str)
        .and_then(parse_rfc3339)
    {
        Some(t) => human_duration(now - t),
        None => "<unknown>".to_string(),
    }
}

/// The AGE cell of an object.
pub fn age_cell(obj: &Value) -> Value {
    Value::String(since(obj, "/metadata/creationTimestamp"))
}

/// The NAME cell of an object.
pub fn name_cell(obj: &Value) -> Value {
    obj.pointer("/metadata/name")
        .cloned()
        .unwrap_or(Value::from(""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn human_duration_matches_upstream_table() {
        let cases = [
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (59, "59s"),
            (119, "119s"),
            (120, "2m"),
            (121, "2m1s"),
            (599, "9m59s"),
            (600, "10m"),
            (90 * 60, "90m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 30 * 60, "3h30m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (49 * 3600, "2d1h"),
            (8 * 86_400, "8d"),
            (729 * 86_400, "729d"),
            (730 * 86_400, "2y"),
            (731 * 86_400, "2y1d"),
            (8 * 365 * 86_400, "8y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(secs), want, "{secs}s");
        }
    }

    #[test]
    fn human_duration_hours_with_minutes_below_eight_hours() {
        // From 3h on the minute remainder shows only below 8h.
        assert_eq!(human_duration(5 * 3600 + 15 * 60), "5h15m");
        assert_eq!(human_duration(7 * 3600), "7h");
    }

    #[test]
    fn parses_rfc3339_variants() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2024-01-02T03:04:05Z"), Some(1_704_164_645));
        assert_eq!(
            parse_rfc3339("2024-01-02T03:04:05.999999Z"),
            Some(1_704_164_645)
        );
        assert_eq!(
            parse_rfc3339("2024-01-02T04:04:05+01:00"),
            Some(1_704_164_645)
        );
        assert_eq!(parse_rfc3339("2024-13-02T03:04:05Z"), None);
        assert_eq!(parse_rfc3339("garbage"), None);
    }

    #[test]
    fn since_reports_unknown_for_missing_timestamps() {
        let obj = json!({"metadata": {"creationTimestamp": "1970-01-01T00:00:00Z"}});
        assert_eq!(since_at(&obj, "/metadata/creationTimestamp", 300), "5m");
        assert_eq!(since_at(&obj, "/metadata/missing", 300), "<unknown>");
    }
}
