//! Just enough of `resource.Quantity` to compare two quantities: parse the canonical
//! and non-canonical forms (`100m`, `0.1`, `1Gi`, `1e3`) to a number.
//!
//! Invariant: comparison only — values are never re-serialized, so the precision of
//! an `f64` is enough (upstream compares exactly; the difference only shows for values
//! beyond 2^53 of the smallest unit).
//!
//! Where to look next: `podspec_validation.rs` (limits vs requests) and `pod.rs` (QoS).

/// The value of a quantity string in base units, or `None` when it does not parse.
pub fn parse_quantity(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    if number.is_empty() || number == "+" || number == "-" {
        return None;
    }
    let base: f64 = number.parse().ok()?;
    let multiplier = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exp if exp.starts_with(['e', 'E']) => 10f64.powi(exp[1..].parse().ok()?),
        _ => return None,
    };
    Some(base * multiplier)
}

/// The value of a quantity given as a JSON string or number.
pub fn quantity_value(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::String(s) => parse_quantity(s),
        serde_json::Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_suffixes() {
        assert_eq!(parse_quantity("100m"), Some(0.1));
        assert_eq!(parse_quantity("2"), Some(2.0));
        assert_eq!(parse_quantity("1Gi"), Some(1073741824.0));
        assert_eq!(parse_quantity("1e3"), Some(1000.0));
        assert_eq!(parse_quantity("1.5k"), Some(1500.0));
        assert_eq!(parse_quantity("abc"), None);
        assert_eq!(parse_quantity("1Xi"), None);
    }
}
