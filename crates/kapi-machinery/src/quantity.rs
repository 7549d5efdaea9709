//! Resource quantities as the quota and limit plugins need them: exact sums
//! and differences (in thousandths, as upstream's `MilliValue`), comparisons,
//! and upstream's canonical text for what they write (`status.used`):
//! `500m`, `1`, `2k`, `128Mi`. A quantity written in binary units (`Mi`) sums
//! to binary units, as upstream keeps the format of the first operand.

use std::collections::BTreeMap;

/// A quantity in thousandths of its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Qty {
    pub milli: i128,
    pub binary: bool,
}

const BINARY: &[(&str, u32)] = &[
    ("Ki", 1),
    ("Mi", 2),
    ("Gi", 3),
    ("Ti", 4),
    ("Pi", 5),
    ("Ei", 6),
];
const DECIMAL: &[(&str, i32)] = &[
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("", 0),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

/// `10^exp` times `digits` (a decimal number text), in thousandths, rounded up
/// as upstream rounds sub-milli amounts up.
fn scaled(number: &str, exp: i32) -> Option<i128> {
    let (neg, number) = match number.strip_prefix('-') {
        Some(n) => (true, n),
        None => (false, number.strip_prefix('+').unwrap_or(number)),
    };
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let digits: String = format!("{int}{frac}");
    let mut value: i128 = digits.parse().ok()?;
    // value * 10^(exp + 3 - frac.len())
    let shift = exp + 3 - frac.len() as i32;
    if shift >= 0 {
        value = value.checked_mul(10i128.checked_pow(shift as u32)?)?;
    } else {
        let div = 10i128.checked_pow((-shift) as u32)?;
        value = (value + div - 1) / div;
    }
    Some(if neg { -value } else { value })
}

impl Qty {
    pub fn parse(s: &str) -> Option<Qty> {
        let s = s.trim();
        for (suffix, power) in BINARY {
            if let Some(n) = s.strip_suffix(suffix) {
                let v = scaled(n, 0)?.checked_mul(1024i128.pow(*power))?;
                return Some(Qty {
                    milli: v,
                    binary: true,
                });
            }
        }
        if let Some((n, e)) = s.split_once(['e', 'E']) {
            let exp: i32 = e.parse().ok()?;
            return Some(Qty {
                milli: scaled(n, exp)?,
                binary: false,
            });
        }
        for (suffix, exp) in DECIMAL.iter().rev() {
            if suffix.is_empty() {
                continue;
            }
            if let Some(n) = s.strip_suffix(suffix) {
                return Some(Qty {
                    milli: scaled(n, *exp)?,
                    binary: false,
                });
            }
        }
        Some(Qty {
            milli: scaled(s, 0)?,
            binary: false,
        })
    }

    /// A JSON quantity (string or number).
    pub fn from_json(v: &serde_json::Value) -> Option<Qty> {
        match v {
            serde_json::Value::String(s) => Qty::parse(s),
            serde_json::Value::Number(n) => Qty::parse(&n.to_string()),
            _ => None,
        }
    }

    pub fn from_count(n: i64) -> Qty {
        Qty {
            milli: i128::from(n) * 1000,
            binary: false,
        }
    }

    pub fn plus(self, o: Qty) -> Qty {
        Qty {
            milli: self.milli + o.milli,
            binary: if self.milli == 0 {
                o.binary
            } else {
                self.binary
            },
        }
    }

    pub fn minus(self, o: Qty) -> Qty {
        Qty {
            milli: self.milli - o.milli,
            binary: self.binary,
        }
    }

    pub fn is_zero(self) -> bool {
        self.milli == 0
    }

    /// Upstream's canonical text.
    pub fn canonical(self) -> String {
        let v = self.milli;
        if self.binary && v % 1000 == 0 && v.abs() >= 1024 * 1000 {
            let mut n = v / 1000;
            let mut unit = 0;
            while unit < BINARY.len() && n % 1024 == 0 && n != 0 {
                n /= 1024;
                unit += 1;
            }
            if unit > 0 {
                return format!("{n}{}", BINARY[unit - 1].0);
            }
            return n.to_string();
        }
        if v == 0 {
            return "0".into();
        }
        // Decimal: the largest exponent (multiple of 3) keeping an integer.
        let (mut n, mut exp) = (v, -3i32);
        while n % 1000 == 0 && exp < 18 {
            n /= 1000;
            exp += 3;
        }
        let suffix = DECIMAL
            .iter()
            .find(|(_, e)| *e == exp)
            .map(|(s, _)| *s)
            .unwrap_or("");
        format!("{n}{suffix}")
    }
}

impl std::fmt::Display for Qty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.canonical())
    }
}

/// A resource list (`{"cpu": "100m", ...}`).
pub type List = BTreeMap<String, Qty>;

/// A JSON resource list; entries that do not parse are left out.
pub fn list(v: Option<&serde_json::Value>) -> List {
    v.and_then(serde_json::Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, q)| Some((k.clone(), Qty::from_json(q)?)))
        .collect()
}

/// `k=v,k=v` sorted by name (upstream's `prettyPrint`).
pub fn pretty(l: &List) -> String {
    l.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

pub fn to_json(l: &List) -> serde_json::Value {
    serde_json::Value::Object(
        l.iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.canonical())))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_canonically() {
        let q = |s: &str| Qty::parse(s).unwrap();
        assert_eq!(q("100m").plus(q("200m")).canonical(), "300m");
        assert_eq!(q("500m").plus(q("500m")).canonical(), "1");
        assert_eq!(q("64Mi").plus(q("64Mi")).canonical(), "128Mi");
        assert_eq!(q("1Gi").canonical(), "1Gi");
        assert_eq!(q("2000").canonical(), "2k");
        assert_eq!(q("0.5").canonical(), "500m");
        assert_eq!(q("1e3").canonical(), "1k");
        assert_eq!(Qty::from_count(3).canonical(), "3");
        assert!(q("1.5Gi") > q("1Gi"));
        assert_eq!(q("1G").milli, 1_000_000_000_000);
        assert!(Qty::parse("abc").is_none());
    }
}
