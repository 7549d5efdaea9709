//! The command line as pflag (and so kube-apiserver) reads it: `--flag=value`,
//! `--flag value` (the next argument is the value whatever it looks like),
//! booleans as `--flag` or `--flag=false` (never `--flag false`: `false` is then
//! a positional argument), shorthands (`-v=2`, `-v2`, `-v 2`, `-h`), `_` read as
//! `-` in names, `--` ending the flags. Errors are pflag's texts.
//!
//! Invariant: every value in [`Parsed`] passed [`value::check`] for its type.

use super::table::{self, Spec};
use super::value;

/// The flags given, in order, with their values, and the positional arguments.
#[derive(Debug, Default)]
pub struct Parsed {
    pub given: Vec<(&'static Spec, String)>,
    pub positional: Vec<String>,
    /// `Flag --x has been deprecated, …` lines, one per use.
    pub warnings: Vec<String>,
}

/// How a flag is named in errors: `--secure-port`, or `-v, --v` with a shorthand.
pub fn display(spec: &Spec) -> String {
    match spec.short {
        Some(c) => format!("-{c}, --{}", spec.name),
        None => format!("--{}", spec.name),
    }
}

pub fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let s = &args[i];
        i += 1;
        if s.len() < 2 || !s.starts_with('-') {
            out.positional.push(s.clone());
            continue;
        }
        if s == "--" {
            out.positional.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = s.strip_prefix("--") {
            long_flag(s, long, args, &mut i, &mut out)?;
        } else {
            short_flags(&s[1..], args, &mut i, &mut out)?;
        }
    }
    Ok(out)
}

fn long_flag(
    arg: &str,
    long: &str,
    args: &[String],
    i: &mut usize,
    out: &mut Parsed,
) -> Result<(), String> {
    if long.is_empty() || long.starts_with('-') || long.starts_with('=') {
        return Err(format!("bad flag syntax: {arg}"));
    }
    let (name, inline) = match long.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (long, None),
    };
    let normalized = name.replace('_', "-");
    let spec = table::lookup(&normalized).ok_or_else(|| format!("unknown flag: --{name}"))?;
    let val = match inline {
        Some(v) => v,
        None if value::is_boolish(spec.ty) => "true".into(),
        None if *i < args.len() => {
            *i += 1;
            args[*i - 1].clone()
        }
        None => return Err(format!("flag needs an argument: {arg}")),
    };
    set(spec, val, out)
}

fn short_flags(
    shorthands: &str,
    args: &[String],
    i: &mut usize,
    out: &mut Parsed,
) -> Result<(), String> {
    let mut rest = shorthands;
    while let Some(c) = rest.chars().next() {
        let after = &rest[c.len_utf8()..];
        let spec = table::lookup_short(c)
            .ok_or_else(|| format!("unknown shorthand flag: '{c}' in -{shorthands}"))?;
        let val = if let Some(v) = after.strip_prefix('=') {
            rest = "";
            v.to_string()
        } else if value::is_boolish(spec.ty) {
            rest = after;
            "true".into()
        } else if !after.is_empty() {
            rest = "";
            after.to_string()
        } else if *i < args.len() {
            rest = "";
            *i += 1;
            args[*i - 1].clone()
        } else {
            return Err(format!("flag needs an argument: '{c}' in -{shorthands}"));
        };
        set(spec, val, out)?;
    }
    Ok(())
}

fn set(spec: &'static Spec, val: String, out: &mut Parsed) -> Result<(), String> {
    value::check(spec.ty, &val).map_err(|e| {
        format!(
            "invalid argument \"{val}\" for \"{}\" flag: {e}",
            display(spec)
        )
    })?;
    if let Some(msg) = spec.deprecated {
        out.warnings
            .push(format!("Flag --{} has been deprecated, {msg}", spec.name));
    }
    out.given.push((spec, val));
    Ok(())
}
