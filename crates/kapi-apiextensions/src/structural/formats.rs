//! String formats the apiextensions server checks (go-openapi's `strfmt.Default`
//! registry, limited to the formats CRDs keep: upstream strips the others, and
//! number formats like `int32` or `double` are never checked against values).
//!
//! A format not listed here always passes, as an unregistered format does upstream.

use std::sync::OnceLock;

use regex::Regex;

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).unwrap_or_else(|_| Regex::new("$^").unwrap()))
}

macro_rules! matcher {
    ($name:ident, $pat:expr) => {
        fn $name(s: &str) -> bool {
            static CELL: OnceLock<Regex> = OnceLock::new();
            re(&CELL, $pat).is_match(s)
        }
    };
}

matcher!(
    uuid,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
matcher!(
    uuid3,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
matcher!(
    uuid4,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
matcher!(
    uuid5,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
matcher!(date, r"^\d{4}-\d{2}-\d{2}$");
matcher!(
    date_time,
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}(:?\d{2})?)?$"
);
matcher!(
    duration,
    r"^(-?\d+(\.\d*)?\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?|sec|min|hr)\s*)+$"
);
matcher!(hexcolor, r"^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$");
matcher!(
    rgbcolor,
    r"^rgb\(\s*\d{1,3}%?\s*,\s*\d{1,3}%?\s*,\s*\d{1,3}%?\s*\)$"
);
matcher!(
    mac,
    r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{2}[:-]){7}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}$"
);
matcher!(
    hostname,
    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$"
);
matcher!(
    email,
    r"^[^@\s]+@[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$"
);
matcher!(bsonobjectid, r"^[0-9a-fA-F]{24}$");
matcher!(ssn, r"^\d{3}[- ]?\d{2}[- ]?\d{4}$");
matcher!(uri, r"^[a-zA-Z][a-zA-Z0-9+.-]*:[^\s]*$");

fn date_ok(s: &str) -> bool {
    if !date(s) {
        return false;
    }
    let month: u32 = s[5..7].parse().unwrap_or(0);
    let day: u32 = s[8..10].parse().unwrap_or(0);
    (1..=12).contains(&month) && (1..=31).contains(&day)
}

fn date_time_ok(s: &str) -> bool {
    date_time(s) && s.len() >= 10 && date_ok(&s[..10])
}

fn ipv4(s: &str) -> bool {
    s.parse::<std::net::Ipv4Addr>().is_ok()
}

fn ipv6(s: &str) -> bool {
    s.parse::<std::net::Ipv6Addr>().is_ok()
}

fn cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    (ipv4(ip) && bits <= 32) || (ipv6(ip) && bits <= 128)
}

/// Go's `base64.StdEncoding.DecodeString` accepts it.
pub(super) fn base64_std(s: &str) -> bool {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(4) {
        return false;
    }
    let pad = b.iter().rev().take_while(|c| **c == b'=').count();
    if pad > 2 {
        return false;
    }
    b[..b.len() - pad]
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
}

fn isbn10(s: &str) -> bool {
    let d: Vec<char> = s.chars().filter(|c| *c != '-' && *c != ' ').collect();
    if d.len() != 10 {
        return false;
    }
    let mut sum = 0;
    for (i, c) in d.iter().enumerate() {
        let v = match c {
            '0'..='9' => *c as u32 - '0' as u32,
            'X' | 'x' if i == 9 => 10,
            _ => return false,
        };
        sum += v * (10 - i as u32);
    }
    sum % 11 == 0
}

fn isbn13(s: &str) -> bool {
    let d: Vec<u32> = s
        .chars()
        .filter(|c| *c != '-' && *c != ' ')
        .map(|c| c.to_digit(10).unwrap_or(99))
        .collect();
    if d.len() != 13 || d.iter().any(|x| *x > 9) {
        return false;
    }
    let sum: u32 = d
        .iter()
        .enumerate()
        .map(|(i, x)| if i % 2 == 0 { *x } else { x * 3 })
        .sum();
    sum.is_multiple_of(10)
}

fn creditcard(s: &str) -> bool {
    let d: Vec<u32> = s.chars().filter_map(|c| c.to_digit(10)).collect();
    if d.len() < 13
        || d.len() > 19
        || s.chars()
            .any(|c| !c.is_ascii_digit() && c != ' ' && c != '-')
    {
        return false;
    }
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, x)| {
            if i % 2 == 1 {
                let y = x * 2;
                if y > 9 {
                    y - 9
                } else {
                    y
                }
            } else {
                *x
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Whether string `s` satisfies `format`.
pub(super) fn is_valid(format: &str, s: &str) -> bool {
    match format {
        "bsonobjectid" => bsonobjectid(s),
        "uri" => uri(s),
        "email" => email(s),
        "hostname" => hostname(s),
        "ipv4" => ipv4(s),
        "ipv6" => ipv6(s),
        "cidr" => cidr(s),
        "mac" => mac(s),
        "uuid" => uuid(s),
        "uuid3" => uuid3(s),
        "uuid4" => uuid4(s),
        "uuid5" => uuid5(s),
        "isbn" => isbn10(s) || isbn13(s),
        "isbn10" => isbn10(s),
        "isbn13" => isbn13(s),
        "creditcard" => creditcard(s),
        "ssn" => ssn(s),
        "hexcolor" => hexcolor(s),
        "rgbcolor" => rgbcolor(s),
        "byte" => base64_std(s),
        "date" => date_ok(s),
        "datetime" | "date-time" => date_time_ok(s),
        "duration" => duration(s),
        _ => true,
    }
}
