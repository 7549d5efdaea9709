//! `--help`: the flags grouped by upstream's sections, one line per flag in
//! pflag's layout (`      --name type   help (default x)`), each line that
//! kapi does not act on marked as such.
//!
//! Invariant: a flag line starts with spaces and `--name` (or `-x, --name`),
//! as tools that scan kube-apiserver's help for a flag (envtest) expect, and
//! no line starts with a flag the table does not have.

use super::table::{specs, Section, Spec, Status};
use super::value;

const ABOUT: &str =
    "kapi, a Kubernetes API server in Rust, run with kube-apiserver's command line.\n\
It serves the Kubernetes API over HTTPS from an embedded store or from etcd.";

/// The whole help text of `command` (`kube-apiserver`, `kapi serve`).
pub fn render(command: &str) -> String {
    let mut out = format!("{ABOUT}\n\nUsage:\n  {command} [flags]\n\n");
    for section in Section::ALL {
        let rows: Vec<(String, &Spec)> = specs()
            .iter()
            .filter(|s| s.section == section)
            .map(|s| (left(s), s))
            .collect();
        if rows.is_empty() {
            continue;
        }
        let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
        out.push_str(section.title());
        out.push_str(":\n\n");
        for (l, spec) in rows {
            out.push_str(&format!("{l:width$}   {}\n", right(spec)));
        }
        out.push('\n');
    }
    out.push_str(
        "Flags marked [no effect in kapi] are accepted and mean nothing here; flags marked\n\
         [not implemented yet] are accepted and do nothing yet. Both are named in the log when given.\n",
    );
    out
}

fn left(s: &Spec) -> String {
    let name = match s.short {
        Some(c) => format!("  -{c}, --{}", s.name),
        None => format!("      --{}", s.name),
    };
    match s.ty {
        "bool" => name,
        "version" => format!("{name} version[=true]"),
        ty => format!("{name} {ty}"),
    }
}

fn right(s: &Spec) -> String {
    let mut text = s.help.to_string();
    if let Some(d) = shown_default(s) {
        text.push_str(&format!(" (default {d})"));
    }
    if let Some(msg) = s.deprecated {
        text.push_str(&format!(" (DEPRECATED: {msg})"));
    }
    match s.status {
        Status::Implemented => {}
        Status::NoEffect => text.push_str(" [no effect in kapi]"),
        Status::NotYet => text.push_str(" [not implemented yet]"),
    }
    text
}

/// The default as pflag shows it, `None` for a zero value.
fn shown_default(s: &Spec) -> Option<String> {
    let d = s.default;
    let zero = d.is_empty() || matches!(d, "false" | "0" | "0s");
    if zero {
        return None;
    }
    Some(match s.ty {
        "string" => format!("\"{d}\""),
        "strings" => format!("[{d}]"),
        "duration" => value::parse_duration(d).map_or(d.to_string(), value::format_duration),
        _ => d.to_string(),
    })
}
