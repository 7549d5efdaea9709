//! kube-apiserver's command line: every flag of 1.33 in one table
//! (`table.rs`), parsed with pflag's syntax (`parse.rs`, `value.rs`), read into
//! [`ServeArgs`] (`args.rs`), printed as upstream's grouped help (`help.rs`).
//!
//! Each flag is implemented, accepted without meaning in kapi, or accepted but
//! not implemented yet; [`Flags::report`] names the last two kinds once in the
//! log when they are given, so no flag is silently ignored.
//!
//! Invariant: a parse error is one line, upstream's text without its `Error: `
//! prefix; the binary prints it with that prefix and exits 1, as upstream.

mod args;
pub mod audit;
pub mod emulation;
pub mod gates;
pub mod help;
pub mod metrics;
pub mod parse;
pub mod table;
pub mod value;

#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::time::Duration;

pub use args::ServeArgs;
use table::Status;

/// What the command line asks for.
pub enum Outcome {
    Help,
    /// `--version` with its value (`true`, `raw` or `vX.Y.Z`).
    Version(String),
    Run(Flags),
}

/// The parsed flags of one command line.
#[derive(Debug)]
pub struct Flags {
    parsed: parse::Parsed,
}

/// Parse `args` (without the program or subcommand name); `command` names the
/// command in the positional-argument error (`kube-apiserver`, `kapi serve`).
pub fn parse(command: &str, args: &[String]) -> Result<Outcome, String> {
    let parsed = parse::parse(args)?;
    let flags = Flags { parsed };
    if flags.given("help") && flags.bool("help") {
        return Ok(Outcome::Help);
    }
    if flags.given("version") && flags.string("version") != "false" {
        return Ok(Outcome::Version(flags.string("version")));
    }
    // kube-apiserver takes no arguments but lets empty ones through (shell
    // scripts pass "${unset_var}").
    let extra: Vec<&String> = flags
        .parsed
        .positional
        .iter()
        .filter(|a| !a.is_empty())
        .collect();
    if !extra.is_empty() {
        return Err(format!(
            "\"{command}\" does not take any arguments, got {extra:?}"
        ));
    }
    Ok(Outcome::Run(flags))
}

impl Flags {
    /// Deprecation notices of the flags used, as pflag prints them.
    pub fn warnings(&self) -> &[String] {
        &self.parsed.warnings
    }

    /// The flags given that kapi does not act on, once each, by status.
    pub fn report(&self) -> (Vec<&'static str>, Vec<&'static str>) {
        let mut noop = Vec::new();
        let mut todo = Vec::new();
        for (spec, _) in &self.parsed.given {
            let list = match spec.status {
                Status::NoEffect => &mut noop,
                Status::NotYet => &mut todo,
                Status::Implemented => continue,
            };
            if !list.contains(&spec.name) {
                list.push(spec.name);
            }
        }
        (noop, todo)
    }

    pub fn given(&self, name: &str) -> bool {
        self.parsed.given.iter().any(|(s, _)| s.name == name)
    }

    fn spec(&self, name: &str) -> &'static table::Spec {
        table::lookup(name).unwrap_or_else(|| panic!("flag --{name} is not in the table"))
    }

    fn values(&self, name: &str) -> Vec<&str> {
        let vals: Vec<&str> = self
            .parsed
            .given
            .iter()
            .filter(|(s, _)| s.name == name)
            .map(|(_, v)| v.as_str())
            .collect();
        if vals.is_empty() {
            vec![self.spec(name).default]
        } else {
            vals
        }
    }

    /// The last value given, or the default.
    pub fn string(&self, name: &str) -> String {
        self.values(name)
            .last()
            .copied()
            .unwrap_or_default()
            .to_string()
    }

    /// The value, `None` when empty (pflag's unset string).
    pub fn opt_string(&self, name: &str) -> Option<String> {
        Some(self.string(name)).filter(|s| !s.is_empty())
    }

    pub fn path(&self, name: &str) -> PathBuf {
        PathBuf::from(self.string(name))
    }

    pub fn opt_path(&self, name: &str) -> Option<PathBuf> {
        self.opt_string(name).map(PathBuf::from)
    }

    pub fn bool(&self, name: &str) -> bool {
        value::parse_bool(&self.string(name)).unwrap_or(false)
    }

    /// An `int` flag, checked against `lo..=hi`.
    pub fn int_in(&self, name: &str, lo: i64, hi: i64) -> Result<i64, String> {
        let v = value::parse_int(&self.string(name), 64, "ParseInt")?;
        if v < lo || v > hi {
            return Err(format!(
                "--{name} {v} must be between {lo} and {hi}, inclusive"
            ));
        }
        Ok(v)
    }

    /// A `duration` flag; negative values are refused.
    pub fn duration(&self, name: &str) -> Result<Duration, String> {
        let ns = value::parse_duration(&self.string(name))?;
        u64::try_from(ns)
            .map(Duration::from_nanos)
            .map_err(|_| format!("--{name} must not be negative"))
    }

    /// A list flag: every occurrence's items (`strings` split on commas,
    /// `stringArray` and `namedCertKey` whole), or the default's.
    pub fn list(&self, name: &str) -> Vec<String> {
        let whole = matches!(self.spec(name).ty, "stringArray" | "namedCertKey");
        let mut out = Vec::new();
        for v in self.values(name) {
            if whole {
                out.push(v.to_string());
            } else {
                out.extend(value::csv_fields(v).unwrap_or_default());
            }
        }
        out
    }

    /// A `mapStringString` flag given as `key=value` per occurrence (the
    /// value not split on commas, as upstream's `MapStringStringNoSplit`);
    /// the last value of a key wins.
    pub fn map(&self, name: &str) -> std::collections::BTreeMap<String, String> {
        self.parsed
            .given
            .iter()
            .filter(|(s, _)| s.name == name)
            .filter_map(|(_, v)| v.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect()
    }

    /// A `stringToString` flag: each occurrence's CSV fields, each `key=value`
    /// split at its first `=` (pflag's reading; quote a field holding commas).
    pub fn string_map(&self, name: &str) -> std::collections::BTreeMap<String, String> {
        self.parsed
            .given
            .iter()
            .filter(|(s, _)| s.name == name)
            .flat_map(|(_, v)| value::csv_fields(v).unwrap_or_default())
            .filter_map(|f| {
                f.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect()
    }

    /// [`Flags::list`] without empty items (`--flag=` means none).
    pub fn list_nonempty(&self, name: &str) -> Vec<String> {
        self.list(name)
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// `-v`: the klog verbosity given, if any.
    pub fn verbosity(&self) -> Option<u64> {
        self.given("v")
            .then(|| value::parse_uint(&self.string("v"), 32).unwrap_or(0))
    }
}
