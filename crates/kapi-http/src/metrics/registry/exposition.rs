//! The registry's text exposition: every served family's series in the
//! Prometheus text format (version 0.0.4), by family, then by label values.

use super::*;

impl Metrics {
    /// Everything in the Prometheus text format (version 0.0.4).
    pub fn render(&self) -> String {
        let families = self.families.lock().expect("metrics lock").clone();
        let map = self.inner.read().expect("metrics lock");
        // In the text format's order: by family, then by label values.
        let mut sorted: Vec<&(Key, Series)> = map.values().flatten().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = String::new();
        for (name, fam) in &families {
            if self.policy.disabled.contains(*name) {
                continue;
            }
            let kind = match fam.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram(_) => "histogram",
            };
            let _ = writeln!(out, "# HELP {name} {}\n# TYPE {name} {kind}", fam.help);
            let start = sorted.partition_point(|((n, _), _)| n < name);
            let range = sorted[start..].iter();
            for ((n, values), series) in range.take_while(|((n, _), _)| n == name) {
                let labels = label_text(fam.labels, values);
                match series {
                    Series::Value(v) => {
                        let _ = writeln!(out, "{n}{} {}", braces(&labels), num(load_f64(v)));
                    }
                    Series::Atomic(a) => {
                        let v = a.load(Ordering::Relaxed);
                        let _ = writeln!(out, "{n}{} {v}", braces(&labels));
                    }
                    Series::Histogram(h) => {
                        let Kind::Histogram(bounds) = fam.kind else {
                            continue;
                        };
                        let (counts, count) = h.cumulative();
                        let sum = load_f64(&h.sum);
                        for (b, c) in bounds.iter().zip(counts) {
                            let l = join(&labels, &format!("le=\"{}\"", num(*b)));
                            let _ = writeln!(out, "{n}_bucket{{{l}}} {c}");
                        }
                        let l = join(&labels, "le=\"+Inf\"");
                        let _ = writeln!(out, "{n}_bucket{{{l}}} {count}");
                        let _ = writeln!(out, "{n}_sum{} {}", braces(&labels), num(sum));
                        let _ = writeln!(out, "{n}_count{} {count}", braces(&labels));
                    }
                }
            }
        }
        out
    }
}

fn label_text(names: &[&str], values: &[String]) -> String {
    names
        .iter()
        .zip(values)
        .map(|(n, v)| format!("{n}=\"{}\"", escape(v)))
        .collect::<Vec<_>>()
        .join(",")
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn braces(labels: &str) -> String {
    if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    }
}

fn join(labels: &str, extra: &str) -> String {
    if labels.is_empty() {
        extra.to_owned()
    } else {
        format!("{labels},{extra}")
    }
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}
