//! Value syntax of each pflag type, as kube-apiserver parses it: what a single
//! occurrence of a flag may hold, the error text when it may not (the part
//! after `invalid argument "…" for "--flag" flag: `), how occurrences combine
//! (lists append, scalars: last wins — see `Flags`), and Go durations.
//!
//! Invariant: [`check`] accepts exactly the values the typed getters in
//! [`super::Parsed`] can read, so a getter never fails on a checked value.

use std::net::IpAddr;

/// Whether `ty` takes no value (`--flag` alone means true).
pub fn is_boolish(ty: &str) -> bool {
    matches!(ty, "bool" | "version")
}

/// Check one occurrence's value against its type.
pub fn check(ty: &str, v: &str) -> Result<(), String> {
    match ty {
        "bool" => parse_bool(v).map(drop),
        "version" => match v {
            "raw" => Ok(()),
            _ if v.starts_with('v') => Ok(()),
            _ => parse_bool(v).map(drop),
        },
        "int" => parse_int(v, 64, "ParseInt").map(drop),
        "uint" | "Level" => parse_uint(v, if ty == "Level" { 32 } else { 64 }).map(drop),
        "float" | "float32" => v
            .parse::<f64>()
            .map(drop)
            .map_err(|_| format!("strconv.ParseFloat: parsing \"{v}\": invalid syntax")),
        "string" | "stringArray" => Ok(()),
        "strings" => csv_fields(v).map(drop),
        "duration" => parse_duration(v).map(drop),
        "ip" => v
            .parse::<IpAddr>()
            .map(drop)
            .map_err(|_| format!("failed to parse IP: \"{v}\"")),
        "mapStringString" => pairs(v, "malformed pair, expect string=string"),
        "colonSeparatedMultimapStringString" => feature_gates(v),
        "stringToString" => {
            for f in csv_fields(v)? {
                if !f.contains('=') {
                    return Err(format!("{f} must be formatted as key=value"));
                }
            }
            Ok(())
        }
        "portRange" => port_range(v).map(drop),
        "namedCertKey" => named_cert_key(v),
        "quantity" => quantity(v),
        "pattern=N,..." => vmodule(v),
        other => Err(format!("kapi does not know the flag type {other}")),
    }
}

pub fn parse_bool(v: &str) -> Result<bool, String> {
    match v {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(format!(
            "strconv.ParseBool: parsing \"{v}\": invalid syntax"
        )),
    }
}

pub fn parse_int(v: &str, bits: u32, func: &str) -> Result<i64, String> {
    let n: i128 = parse_go_int(v)
        .ok_or_else(|| format!("strconv.{func}: parsing \"{v}\": invalid syntax"))?;
    let max = (1i128 << (bits - 1)) - 1;
    if n > max || n < -max - 1 {
        return Err(format!(
            "strconv.{func}: parsing \"{v}\": value out of range"
        ));
    }
    Ok(n as i64)
}

pub fn parse_uint(v: &str, bits: u32) -> Result<u64, String> {
    let bad = || format!("strconv.ParseUint: parsing \"{v}\": invalid syntax");
    if v.starts_with(['-', '+']) {
        return Err(bad());
    }
    let n = parse_go_int(v).ok_or_else(bad)?;
    if n >= 1i128 << bits {
        return Err(format!(
            "strconv.ParseUint: parsing \"{v}\": value out of range"
        ));
    }
    Ok(n as u64)
}

/// Go's base-0 integer syntax: decimal, 0x hex, 0o / leading-0 octal, 0b binary, `_` separators.
fn parse_go_int(v: &str) -> Option<i128> {
    let (neg, digits) = match v.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, v.strip_prefix('+').unwrap_or(v)),
    };
    let lower = digits.to_ascii_lowercase();
    let (radix, body) = if let Some(b) = lower.strip_prefix("0x") {
        (16, b.to_string())
    } else if let Some(b) = lower.strip_prefix("0b") {
        (2, b.to_string())
    } else if let Some(b) = lower.strip_prefix("0o") {
        (8, b.to_string())
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_string())
    } else {
        (10, lower.clone())
    };
    let body = if radix != 10 {
        body.replace('_', "")
    } else {
        body
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let n = i128::from_str_radix(&body, radix).ok()?;
    Some(if neg { -n } else { n })
}

/// A comma-separated list as pflag reads it (CSV: `"a,b",c` is two fields).
pub fn csv_fields(v: &str) -> Result<Vec<String>, String> {
    if v.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = v.chars().peekable();
    let mut quoted = false;
    let mut at_start = true;
    while let Some(c) = chars.next() {
        match c {
            '"' if at_start && !quoted => quoted = true,
            '"' if quoted => {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    cur.push('"');
                } else {
                    quoted = false;
                }
            }
            ',' if !quoted => {
                out.push(std::mem::take(&mut cur));
                at_start = true;
                continue;
            }
            _ => cur.push(c),
        }
        at_start = false;
    }
    if quoted {
        return Err(format!(
            "parse error on line 1, column {}: extraneous or missing \" in quoted-field",
            v.len() + 1
        ));
    }
    out.push(cur);
    Ok(out)
}

fn pairs(v: &str, err: &str) -> Result<(), String> {
    for p in v.split(',').filter(|p| !p.trim().is_empty()) {
        if !p.contains('=') {
            return Err(err.to_string());
        }
    }
    Ok(())
}

/// `[component:]Name=bool`, comma-separated.
fn feature_gates(v: &str) -> Result<(), String> {
    for p in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((key, val)) = p.split_once('=') else {
            return Err(format!("missing bool value for {p}"));
        };
        let name = key.rsplit(':').next().unwrap_or(key).trim();
        parse_bool(val.trim()).map_err(|e| format!("invalid value of {name}={val}, err: {e}"))?;
    }
    Ok(())
}

/// `N1-N2`, `N` or `N+offset`; the range as (base, size).
pub fn port_range(v: &str) -> Result<(u16, u16), String> {
    let atoi = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| format!("strconv.Atoi: parsing \"{s}\": invalid syntax"))
    };
    let (lo, hi) = if let Some((a, b)) = v.split_once('-') {
        (atoi(a)?, atoi(b)?)
    } else if let Some((a, b)) = v.split_once('+') {
        let a = atoi(a)?;
        (a, a + atoi(b)?)
    } else {
        let a = atoi(v)?;
        (a, a)
    };
    if !(0..=65535).contains(&lo) || !(0..=65535).contains(&hi) || hi < lo {
        return Err(format!(
            "\"{v}\" is not a valid port range: ports must be 0-65535, low to high"
        ));
    }
    Ok((lo as u16, (hi - lo + 1) as u16))
}

fn named_cert_key(v: &str) -> Result<(), String> {
    let files = v.split_once(':').map_or(v, |(f, _)| f);
    let parts: Vec<&str> = files.split(',').collect();
    if parts.len() != 2 || parts.iter().any(|p| p.trim().is_empty()) {
        return Err("expected comma separated certificate and key file paths".into());
    }
    Ok(())
}

fn quantity(v: &str) -> Result<(), String> {
    let body = v.trim_start_matches(['+', '-']);
    let split = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (num, suffix) = body.split_at(split);
    let known = [
        "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E",
    ];
    let exp = suffix.starts_with(['e', 'E'])
        && suffix[1..]
            .trim_start_matches(['+', '-'])
            .chars()
            .all(|c| c.is_ascii_digit());
    if num.is_empty() || num.parse::<f64>().is_err() || !(known.contains(&suffix) || exp) {
        return Err("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'".into());
    }
    Ok(())
}

fn vmodule(v: &str) -> Result<(), String> {
    for p in v.split(',').filter(|p| !p.is_empty()) {
        let ok = p
            .split_once('=')
            .is_some_and(|(pat, n)| !pat.is_empty() && n.parse::<u32>().is_ok());
        if !ok {
            return Err(format!("\"{p}\" does not have the pattern=N format"));
        }
    }
    Ok(())
}

/// Go's `time.ParseDuration`, in nanoseconds (signed).
pub fn parse_duration(v: &str) -> Result<i128, String> {
    let invalid = || format!("time: invalid duration \"{v}\"");
    let (neg, mut s) = match v.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, v.strip_prefix('+').unwrap_or(v)),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: f64 = 0.0;
    while !s.is_empty() {
        let num_len = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let num = &s[..num_len];
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return Err(invalid());
        }
        s = &s[num_len..];
        let unit_len = s
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(s.len());
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let scale: f64 = match unit {
            "" => return Err(format!("time: missing unit in duration \"{v}\"")),
            "ns" => 1.0,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(format!("time: unknown unit \"{unit}\" in duration \"{v}\"")),
        };
        total += num.parse::<f64>().map_err(|_| invalid())? * scale;
    }
    if total > i64::MAX as f64 {
        return Err(invalid());
    }
    let ns = total.round() as i128;
    Ok(if neg { -ns } else { ns })
}

/// Go's `time.Duration.String()`: `1h0m0s`, `5m0s`, `2s`, `300ms`, `0s`.
pub fn format_duration(ns: i128) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let sign = if ns < 0 { "-" } else { "" };
    let ns = ns.unsigned_abs();
    let frac = |v: u128, unit: u128| {
        let whole = v / unit;
        let rest = v % unit;
        if rest == 0 {
            whole.to_string()
        } else {
            let digits = unit.to_string().len() - 1;
            let r = format!("{rest:0digits$}");
            format!("{whole}.{}", r.trim_end_matches('0'))
        }
    };
    if ns < 1_000 {
        return format!("{sign}{ns}ns");
    }
    if ns < 1_000_000 {
        return format!("{sign}{}\u{b5}s", frac(ns, 1_000));
    }
    if ns < 1_000_000_000 {
        return format!("{sign}{}ms", frac(ns, 1_000_000));
    }
    let secs = ns / 1_000_000_000;
    let sub = ns % 1_000_000_000;
    let s = frac((secs % 60) * 1_000_000_000 + sub, 1_000_000_000);
    let (h, m) = (secs / 3600, (secs / 60) % 60);
    match (h, secs / 60) {
        (0, 0) => format!("{sign}{s}s"),
        (0, _) => format!("{sign}{m}m{s}s"),
        _ => format!("{sign}{h}h{m}m{s}s"),
    }
}
