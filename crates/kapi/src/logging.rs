//! Logging from the command line: `--logging-format` (`text`, or `json`: one
//! JSON object per line) and `-v`/`--v` (klog verbosity mapped to tracing
//! levels of kapi's crates), both to stderr as upstream. Without `-v`,
//! `RUST_LOG` decides (default `info`).
//!
//! Also the one-time report of flags given that kapi does not act on.

use tracing_subscriber::EnvFilter;

use crate::flags::Flags;

/// kapi's crates, whose level `-v` sets; everything else stays at `info`.
const CRATES: &[&str] = &[
    "kapi",
    "kapi_server",
    "kapi_storage",
    "kapi_registry",
    "kapi_resources",
    "kapi_apiextensions",
    "kapi_machinery",
];

/// The tracing level of a klog verbosity: 0–1 info (klog's default output),
/// 2–4 debug, 5 and up trace.
pub fn level(v: u64) -> &'static str {
    match v {
        0 | 1 => "info",
        2..=4 => "debug",
        _ => "trace",
    }
}

fn filter(flags: &Flags) -> EnvFilter {
    match flags.verbosity() {
        Some(v) => {
            let l = level(v);
            let directives: Vec<String> = std::iter::once("info".to_string())
                .chain(CRATES.iter().map(|c| format!("{c}={l}")))
                .collect();
            EnvFilter::new(directives.join(","))
        }
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
    }
}

/// Install the subscriber the flags ask for.
pub fn init(flags: &Flags) -> Result<(), String> {
    let format = flags.string("logging-format");
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter(flags))
        .with_writer(std::io::stderr);
    match format.as_str() {
        "text" => builder.init(),
        "json" => builder.json().init(),
        other => {
            return Err(format!(
                "--logging-format: Invalid value: \"{other}\": Unsupported log format (text, json)"
            ))
        }
    }
    Ok(())
}

/// Name, once, each flag given that has no effect or is not implemented yet.
pub fn report(flags: &Flags) {
    let (noop, todo) = flags.report();
    for name in noop {
        tracing::info!("flag --{name} has no effect in kapi");
    }
    for name in todo {
        tracing::warn!("flag --{name} accepted, not implemented yet");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn klog_verbosity_maps_to_tracing_levels() {
        let levels: Vec<&str> = [0, 1, 2, 4, 5, 10].into_iter().map(super::level).collect();
        assert_eq!(levels, ["info", "info", "debug", "debug", "trace", "trace"]);
    }
}
