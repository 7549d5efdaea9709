//! Go's `time.Parse` for the two layouts Kubernetes objects use — `metav1.Time`
//! (RFC 3339, `2006-01-02T15:04:05Z07:00`) and `metav1.MicroTime` (exactly six
//! fractional digits, `2006-01-02T15:04:05.000000Z07:00`) — as far as telling
//! whether a string parses and, when it does not, Go's `ParseError` text: a
//! body upstream cannot decode is refused with it (`parsing time "yesterday"
//! as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`).
//!
//! Go's rules, kept here: the layout is walked element by element; literal
//! text must match exactly; the hour may have one digit, the other two-digit
//! fields may not; a fraction after the seconds is accepted even when the
//! layout has none, while `.000000` needs exactly six digits; months, hours,
//! minutes, seconds and zone offsets are range-checked as they are read, the
//! day of the month at the end.

/// `time.RFC3339`.
pub const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
/// `metav1.RFC3339Micro`.
pub const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Elem {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Micros,
    Zone,
}

impl Elem {
    fn layout(self) -> &'static str {
        match self {
            Elem::Year => "2006",
            Elem::Month => "01",
            Elem::Day => "02",
            Elem::Hour => "15",
            Elem::Minute => "04",
            Elem::Second => "05",
            Elem::Micros => ".000000",
            Elem::Zone => "Z07:00",
        }
    }
}

/// `Err` with Go's message when `value` does not parse as `metav1.Time`
/// (`micro == false`) or `metav1.MicroTime`.
pub fn parse(value: &str, micro: bool) -> Result<(), String> {
    let layout = if micro { RFC3339_MICRO } else { RFC3339 };
    let mut chunks: Vec<(&str, Elem)> = vec![
        ("", Elem::Year),
        ("-", Elem::Month),
        ("-", Elem::Day),
        ("T", Elem::Hour),
        (":", Elem::Minute),
        (":", Elem::Second),
    ];
    if micro {
        chunks.push(("", Elem::Micros));
    }
    chunks.push(("", Elem::Zone));
    let whole = value;
    let cannot = |layout_elem: &str, value_elem: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            quote(whole),
            quote(layout),
            quote(value_elem),
            quote(layout_elem)
        )
    };
    let out_of_range = |what: &str| format!("parsing time {}: {what} out of range", quote(whole));
    let (mut year, mut month, mut day) = (0i64, 0i64, 0i64);
    let mut rest = value.as_bytes();
    for (prefix, elem) in chunks {
        // The literal before the element.
        for &b in prefix.as_bytes() {
            if rest.first() != Some(&b) {
                return Err(cannot(prefix, str_of(rest)));
            }
            rest = &rest[1..];
        }
        let hold = rest;
        let bad = || cannot(elem.layout(), str_of(hold));
        match elem {
            Elem::Year => {
                if rest.len() < 4 || !rest[0].is_ascii_digit() {
                    return Err(bad());
                }
                year = atoi(&rest[..4]).ok_or_else(bad)?;
                rest = &rest[4..];
            }
            Elem::Month | Elem::Day | Elem::Minute | Elem::Second | Elem::Hour => {
                let (n, after) = getnum(rest, elem != Elem::Hour).ok_or_else(bad)?;
                rest = after;
                let limit = match elem {
                    Elem::Month if !(1..=12).contains(&n) => Some("month"),
                    Elem::Hour if n >= 24 => Some("hour"),
                    Elem::Minute if n >= 60 => Some("minute"),
                    Elem::Second if n >= 60 => Some("second"),
                    _ => None,
                };
                if let Some(what) = limit {
                    return Err(out_of_range(what));
                }
                match elem {
                    Elem::Month => month = n,
                    Elem::Day => day = n,
                    _ => {}
                }
                // A fraction the layout does not name is read all the same.
                if elem == Elem::Second
                    && !micro
                    && rest.len() >= 2
                    && matches!(rest[0], b'.' | b',')
                    && rest[1].is_ascii_digit()
                {
                    let n = 1 + rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
                    nanoseconds(&rest[..n.min(10)]).ok_or_else(bad)?;
                    rest = &rest[n..];
                }
            }
            Elem::Micros => {
                if rest.len() < 7 {
                    return Err(bad());
                }
                match nanoseconds(&rest[..7]) {
                    Some(ns) if ns < 0 => return Err(out_of_range("fractional second")),
                    Some(_) => rest = &rest[7..],
                    None => return Err(bad()),
                }
            }
            Elem::Zone => {
                if rest.first() == Some(&b'Z') {
                    rest = &rest[1..];
                    continue;
                }
                if rest.len() < 6 || rest[3] != b':' {
                    return Err(bad());
                }
                // Go reads the minutes only when the hours parsed, checks the
                // ranges (the later one's message wins), then the error, then
                // the sign.
                let hours = getnum(&rest[1..3], true).map(|(n, _)| n);
                let minutes = hours.and_then(|_| getnum(&rest[4..6], true).map(|(n, _)| n));
                let mut range = None;
                if hours.is_some_and(|h| h > 24) {
                    range = Some("time zone offset hour");
                }
                if minutes.is_some_and(|m| m > 60) {
                    range = Some("time zone offset minute");
                }
                if let Some(what) = range {
                    return Err(out_of_range(what));
                }
                if minutes.is_none() || !matches!(rest[0], b'+' | b'-') {
                    return Err(bad());
                }
                rest = &rest[6..];
            }
        }
    }
    if !rest.is_empty() {
        return Err(format!(
            "parsing time {}: extra text: {}",
            quote(whole),
            quote(str_of(rest))
        ));
    }
    if day < 1 || day > days_in(month, year) {
        return Err(out_of_range("day"));
    }
    Ok(())
}

/// The bytes as text (they are always a suffix of a `str` cut at ASCII bytes,
/// or the whole of one).
fn str_of(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or_default()
}

/// Go's `getnum`: one or two digits (two when `fixed`).
fn getnum(s: &[u8], fixed: bool) -> Option<(i64, &[u8])> {
    let digit = |i: usize| {
        s.get(i)
            .filter(|b| b.is_ascii_digit())
            .map(|b| i64::from(b - b'0'))
    };
    let first = digit(0)?;
    match digit(1) {
        Some(second) => Some((first * 10 + second, &s[2..])),
        None if fixed => None,
        None => Some((first, &s[1..])),
    }
}

/// Go's `atoi` (a sign, then digits only).
fn atoi(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits.iter().try_fold(0i64, |n, b| {
        n.checked_mul(10)?.checked_add(i64::from(b - b'0'))
    })?;
    Some(if neg { -n } else { n })
}

/// Go's `parseNanoseconds` over `.ddd` (the separator and the digits).
fn nanoseconds(s: &[u8]) -> Option<i64> {
    if !matches!(s.first(), Some(b'.' | b',')) {
        return None;
    }
    atoi(&s[1..])
}

fn days_in(month: i64, year: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Go's `time.quote`: double quotes, `"` and `\` escaped, control and
/// non-ASCII bytes as `\x..`.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c.is_ascii() && c >= ' ' {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        } else if c.is_ascii() {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(v: &str) -> Result<(), String> {
        parse(v, false)
    }

    #[test]
    fn what_go_accepts() {
        for v in [
            "2026-12-05T07:16:11Z",
            "2026-12-05T07:16:11+01:00",
            "2026-12-05T07:16:11.123Z",
            "2026-12-05T07:16:11,5-07:30",
            "2026-12-05T7:16:11Z",
            "2024-02-29T00:00:00Z",
            "2026-12-05T07:16:11+24:00",
        ] {
            assert_eq!(time(v), Ok(()), "{v}");
        }
        assert_eq!(parse("2026-12-05T07:16:11.123456Z", true), Ok(()));
    }

    #[test]
    fn what_go_refuses_in_its_words() {
        let cases = [
            (
                "yesterday",
                r#"parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#,
            ),
            (
                "",
                r#"parsing time "" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "2006""#,
            ),
            (
                "2026-1-05T07:16:11Z",
                r#"parsing time "2026-1-05T07:16:11Z" as "2006-01-02T15:04:05Z07:00": cannot parse "1-05T07:16:11Z" as "01""#,
            ),
            (
                "2026-12-05 07:16:11Z",
                r#"parsing time "2026-12-05 07:16:11Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 07:16:11Z" as "T""#,
            ),
            (
                "2026-13-05T07:16:11Z",
                r#"parsing time "2026-13-05T07:16:11Z": month out of range"#,
            ),
            (
                "2026-02-30T07:16:11Z",
                r#"parsing time "2026-02-30T07:16:11Z": day out of range"#,
            ),
            (
                "2026-12-05T24:00:00Z",
                r#"parsing time "2026-12-05T24:00:00Z": hour out of range"#,
            ),
            (
                "2026-12-05T07:16:11",
                r#"parsing time "2026-12-05T07:16:11" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00""#,
            ),
            (
                "2026-12-05T07:16:11Zjunk",
                r#"parsing time "2026-12-05T07:16:11Zjunk": extra text: "junk""#,
            ),
            (
                "2026-12-05T07:16:11+0100",
                r#"parsing time "2026-12-05T07:16:11+0100" as "2006-01-02T15:04:05Z07:00": cannot parse "+0100" as "Z07:00""#,
            ),
            (
                "2026-12-05T07:16:11+25:00",
                r#"parsing time "2026-12-05T07:16:11+25:00": time zone offset hour out of range"#,
            ),
            (
                "2026-12-05T07:16:11\"Z",
                r#"parsing time "2026-12-05T07:16:11\"Z" as "2006-01-02T15:04:05Z07:00": cannot parse "\"Z" as "Z07:00""#,
            ),
        ];
        for (v, want) in cases {
            assert_eq!(time(v).unwrap_err(), want, "{v}");
        }
        // MicroTime needs its six digits.
        assert_eq!(
            parse("2026-12-05T07:16:11Z", true).unwrap_err(),
            r#"parsing time "2026-12-05T07:16:11Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#
        );
        assert_eq!(
            parse("2026-12-05T07:16:11.123Z", true).unwrap_err(),
            r#"parsing time "2026-12-05T07:16:11.123Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".123Z" as ".000000""#
        );
    }
}
