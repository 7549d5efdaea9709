//! The cron schedule syntax CronJobs accept: what upstream's validation checks with
//! `robfig/cron/v3`'s `ParseStandard` (five fields, names for months and weekdays,
//! ranges, steps, `*` and `?`, and the `@yearly`…`@hourly` / `@every <duration>`
//! descriptors), with that parser's error messages, which reach users verbatim in
//! `spec.schedule` causes.
//!
//! Invariants: only validation — nothing here computes the next run; a schedule
//! this accepts is one upstream accepts and vice versa (a `TZ=`/`CRON_TZ=` prefix is
//! stripped here and rejected by the caller, as upstream).

/// One field's bounds and names.
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

const DESCRIPTORS: [&str; 7] = [
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];

/// Parses a standard cron spec; `Err` carries the upstream parser's message.
pub fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".to_string());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let Some(space) = spec.find(' ') else {
            return Err(format!("provided bad location {spec}"));
        };
        spec = spec[space..].trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    for (field, bounds) in fields.iter().zip([&MINUTES, &HOURS, &DOM, &MONTHS, &DOW]) {
        for expr in field.split(',').filter(|e| !e.is_empty()) {
            range(expr, bounds)?;
        }
    }
    Ok(())
}

fn parse_descriptor(spec: &str) -> Result<(), String> {
    if DESCRIPTORS.contains(&spec) {
        return Ok(());
    }
    if let Some(duration) = spec.strip_prefix("@every ") {
        return go_duration(duration).map_err(|e| format!("failed to parse duration {spec}: {e}"));
    }
    Err(format!("unrecognized descriptor: {spec}"))
}

/// One comma-separated part of a field: `*`, `n`, `a-b`, each with an optional `/step`.
fn range(expr: &str, b: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_high.len() == 1;
    let (start, mut end) = if low_high[0] == "*" || low_high[0] == "?" {
        (b.min, b.max)
    } else {
        let start = int_or_name(low_high[0], b)?;
        match low_high.len() {
            1 => (start, start),
            2 => (start, int_or_name(low_high[1], b)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            if single {
                end = b.max;
            }
            must_parse_int(range_and_step[1])?
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        ));
    }
    if end > b.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

fn int_or_name(expr: &str, b: &Bounds) -> Result<u64, String> {
    let lower = expr.to_ascii_lowercase();
    match b.names.iter().find(|(n, _)| *n == lower) {
        Some((_, v)) => Ok(*v),
        None => must_parse_int(expr),
    }
}

/// Go's `strconv.Atoi` plus the parser's non-negative rule, with their messages.
fn must_parse_int(expr: &str) -> Result<u64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {}: invalid syntax",
            kapi_machinery::validation::go_quote(expr)
        ));
    }
    match expr.parse::<i64>() {
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {expr}")),
        Ok(n) => Ok(n as u64),
        Err(_) => Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {}: value out of range",
            kapi_machinery::validation::go_quote(expr)
        )),
    }
}

/// Go's `time.ParseDuration` acceptance (`1h30m`, `90s`, `1.5h`, ...).
fn go_duration(s: &str) -> Result<(), String> {
    let quoted = kapi_machinery::validation::go_quote(s);
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body == "0" {
        return Ok(());
    }
    if body.is_empty() {
        return Err(format!("time: invalid duration {quoted}"));
    }
    let mut rest = body;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..num_len];
        if num.is_empty() || num == "." {
            return Err(format!("time: invalid duration {quoted}"));
        }
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {quoted}"));
        }
        if !["ns", "us", "µs", "μs", "ms", "s", "m", "h"].contains(&unit) {
            return Err(format!(
                "time: unknown unit {} in duration {quoted}",
                kapi_machinery::validation::go_quote(unit)
            ));
        }
        rest = &rest[unit_len..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_standard_specs() {
        for ok in [
            "*/1 * * * *",
            "0 0 * * *",
            "5 4 * * sun",
            "0 22 * * 1-5",
            "0 0,12 1 */2 *",
            "@hourly",
            "@every 1h30m",
            "? * * JAN-mar *",
            "30 6-18/2 * * *",
        ] {
            assert_eq!(parse_standard(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn rejects_with_parser_messages() {
        let cases = [
            ("", "empty spec string"),
            ("foo", "expected exactly 5 fields, found 1: [foo]"),
            (
                "* * * * * *",
                "expected exactly 5 fields, found 6: [* * * * * *]",
            ),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            (
                "5-1 * * * *",
                "beginning of range (5) beyond end of range (1): 5-1",
            ),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            ("*/1/2 * * * *", "too many slashes: */1/2"),
            (
                "x * * * *",
                "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            ("@weird", "unrecognized descriptor: @weird"),
        ];
        for (spec, want) in cases {
            assert_eq!(parse_standard(spec), Err(want.to_string()), "{spec}");
        }
        assert!(parse_standard("@every 5x").is_err());
    }
}
