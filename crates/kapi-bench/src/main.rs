//! kapi-bench: point it at any Kubernetes API server through a kubeconfig and
//! run a named scenario; it prints throughput and p50/p99/max latency per kind of
//! operation as a table (and JSON with `--json`), plus — given the server's
//! PIDs — their peak RSS and CPU seconds from `/proc` while the scenario ran.
//!
//! Scenarios (`scenarios.rs`): create, get, list, update, churn (`churn.rs`:
//! RSS and disk over time under updates of a few objects), watch (its watchers
//! run in child processes, one per 250 unless `--procs N` says otherwise,
//! `watchers.rs`), mixed, scale. Watches and whole LISTs are read lean
//! (`lean.rs`) when the kubeconfig has a client certificate and
//! `--kube-client` is not given;
//! with `--protobuf` requests and responses are protobuf where the scenario
//! allows (watches stay JSON). `codec` (`codec.rs`) times the protobuf codec
//! against JSON in this process, without a server.

mod churn;
mod client;
mod codec;
mod lean;
mod scenarios;
mod stats;
mod watchers;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use serde_json::json;

use scenarios::WatchPlan;

/// `watch`'s default spread: one child process per this many watchers.
const WATCHERS_PER_PROC: usize = 250;

#[derive(Parser)]
#[command(name = "kapi-bench", about = "Benchmark a Kubernetes API server")]
struct Args {
    /// Kubeconfig to use (default: $KUBECONFIG or ~/.kube/config).
    #[arg(long, global = true)]
    kubeconfig: Option<PathBuf>,
    /// Namespace the scenario works in (created if missing).
    #[arg(long, global = true, default_value = "bench")]
    namespace: String,
    /// Object names are `<prefix>-<i>`; `watch` and `mixed` add a part unique
    /// to the run (`<prefix>-<run>-…`), as they create objects of their own.
    #[arg(long, global = true, default_value = "bench")]
    prefix: String,
    /// Server process(es) to watch in /proc for RSS and CPU.
    #[arg(long, global = true, value_delimiter = ',')]
    pid: Vec<u32>,
    /// Also write the report as JSON to this file (`-` for stdout).
    #[arg(long, global = true)]
    json: Option<PathBuf>,
    /// Speak protobuf as Go clients do (bodies and `Accept`); watches stay JSON.
    #[arg(long, global = true)]
    protobuf: bool,
    /// Client threads: 1 runs everything on one thread (no wake-ups between
    /// threads, one core left to a server on the same machine); 0 is one per core.
    #[arg(long, global = true, default_value_t = 0)]
    threads: usize,
    /// Read watches and whole LISTs through kube-rs's HTTP client instead of
    /// the lean reader (`lean.rs`: one task, a TLS connection of its own,
    /// nothing copied but by TLS), which is the default when the kubeconfig
    /// authenticates with a client certificate.
    #[arg(long, global = true)]
    kube_client: bool,
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Subcommand)]
enum Scenario {
    /// N creates of S-byte ConfigMaps at concurrency C.
    Create {
        #[arg(long, default_value_t = 2000)]
        count: usize,
        #[arg(long, default_value_t = 1024)]
        size: usize,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
    },
    /// Random GETs by name among `count` existing objects for `seconds`.
    Get {
        #[arg(long, default_value_t = 2000)]
        count: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
    },
    /// Full and paged LISTs, namespaced and cluster-wide, with a selector matching nothing.
    List {
        #[arg(long, default_value_t = 10)]
        repeat: usize,
        #[arg(long, default_value_t = 500)]
        page: usize,
        /// Run only the variants whose name contains this text (e.g. `resourceVersion=0`).
        #[arg(long)]
        only: Option<String>,
    },
    /// CAS updates on a hot set of the first `hot` objects.
    Update {
        #[arg(long, default_value_t = 50)]
        hot: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
    },
    /// `objects` ConfigMaps updated without pause by as many clients, with the
    /// server's RSS (`--pid`) and its data directories' size (`--dir`)
    /// sampled over time, during the writes and `after` seconds beyond.
    Churn {
        #[arg(long, default_value_t = 8)]
        objects: usize,
        #[arg(long, default_value_t = 2048)]
        size: usize,
        #[arg(long, default_value_t = 600)]
        seconds: u64,
        #[arg(long, default_value_t = 60)]
        after: u64,
        #[arg(long, default_value_t = 10)]
        sample: u64,
        /// Total writes per second at most (0: no cap).
        #[arg(long, default_value_t = 0.0)]
        rate: f64,
        /// A data directory whose size is sampled (repeatable).
        #[arg(long)]
        dir: Vec<PathBuf>,
    },
    /// W watchers on the namespace while creates go on at `rate` per second.
    Watch {
        #[arg(long, default_value_t = 100)]
        watchers: usize,
        #[arg(long, default_value_t = 100.0)]
        rate: f64,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 1024)]
        size: usize,
        /// Spread the watchers over this many child processes (0: all in this
        /// one, through kube-rs's client). Default: one per 250 watchers, as
        /// that many informers would be spread over several processes.
        #[arg(long)]
        procs: Option<usize>,
    },
    /// One child process of `watch --procs` (see `watchers.rs`).
    #[command(hide = true)]
    WatchChild {
        #[arg(long)]
        watchers: usize,
        #[arg(long)]
        lean: bool,
    },
    /// Churn (create, update, delete) at `rate` per second with informers attached.
    Mixed {
        #[arg(long, default_value_t = 20)]
        informers: usize,
        #[arg(long, default_value_t = 50.0)]
        rate: f64,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 1024)]
        size: usize,
    },
    /// Load `count` objects, then LIST them `repeat` times.
    Scale {
        #[arg(long, default_value_t = 300_000)]
        count: usize,
        #[arg(long, default_value_t = 1024)]
        size: usize,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        #[arg(long, default_value_t = 5)]
        repeat: usize,
        /// Skip loading (the objects exist already).
        #[arg(long)]
        no_load: bool,
        /// Skip the paged LIST (hundreds of requests per repetition at 300k).
        #[arg(long)]
        no_paged: bool,
    },
    /// Protobuf versus JSON encode and decode per object (Pod, ConfigMap); no server.
    Codec {
        #[arg(long, default_value_t = 20_000)]
        iterations: u32,
    },
}

fn main() {
    let args = Args::parse();
    let runtime = match args.threads {
        1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        n => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            if n > 1 {
                b.worker_threads(n);
            }
            b.enable_all().build()
        }
    }
    .expect("a tokio runtime");
    if let Err(e) = runtime.block_on(run(args)) {
        eprintln!("kapi-bench: {e}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> Result<(), String> {
    if let Scenario::Codec { iterations } = args.scenario {
        let rows = codec::run(iterations);
        codec::print_table(&rows);
        return write_json(
            args.json.as_deref(),
            &json!({"scenario": "codec", "results": rows}),
        );
    }
    let mut api =
        client::Api::connect(args.kubeconfig.as_deref(), &args.namespace, args.protobuf).await?;
    api.lean = !args.kube_client && lean::can_open(&api.config);
    api.ensure_namespace().await?;
    let procs: Vec<_> = args
        .pid
        .iter()
        .map(|p| stats::ProcWatch::start(*p))
        .collect();
    let prefix = args.prefix.as_str();
    let mut extra = serde_json::Value::Null;
    let (name, results) = match args.scenario {
        Scenario::Create {
            count,
            size,
            concurrency,
        } => (
            "create",
            vec![scenarios::create(&api, prefix, count, size, concurrency).await],
        ),
        Scenario::Get {
            count,
            seconds,
            concurrency,
        } => (
            "get",
            vec![
                scenarios::get(
                    &api,
                    prefix,
                    count,
                    Duration::from_secs(seconds),
                    concurrency,
                )
                .await,
            ],
        ),
        Scenario::List { repeat, page, only } => (
            "list",
            scenarios::list(&api, repeat, Some(page), only.as_deref()).await,
        ),
        Scenario::Update {
            hot,
            seconds,
            concurrency,
        } => (
            "update",
            scenarios::update(&api, prefix, hot, Duration::from_secs(seconds), concurrency).await,
        ),
        Scenario::Churn {
            objects,
            size,
            seconds,
            after,
            sample,
            rate,
            dir,
        } => {
            let plan = churn::ChurnPlan {
                objects,
                size,
                duration: Duration::from_secs(seconds),
                after: Duration::from_secs(after),
                sample: Duration::from_secs(sample.max(1)),
                rate,
                pids: args.pid.clone(),
                dirs: dir,
            };
            let (samples, timeline) = churn::run(&api, prefix, &plan).await?;
            extra = timeline;
            ("churn", vec![samples])
        }
        Scenario::Watch {
            watchers,
            rate,
            seconds,
            size,
            procs,
        } => {
            let prefix = &run_prefix(prefix);
            let procs = procs.unwrap_or(watchers.div_ceil(WATCHERS_PER_PROC));
            let lean = api.lean;
            let plan = WatchPlan {
                watchers,
                rate,
                duration: Duration::from_secs(seconds),
                size,
                informers: false,
                churn: false,
            };
            if procs == 0 {
                ("watch", scenarios::watch(&api, prefix, &plan).await)
            } else {
                let child_args = child_args(&args.kubeconfig, &args.namespace, prefix);
                let children = watchers::Children {
                    args: &child_args,
                    procs,
                    lean,
                };
                let (samples, more) =
                    watchers::parent(&api, &children, prefix, &plan, &args.pid).await?;
                extra = more;
                ("watch", samples)
            }
        }
        Scenario::WatchChild { watchers, lean } => {
            return watchers::child(&api, prefix, watchers, lean).await;
        }
        Scenario::Mixed {
            informers,
            rate,
            seconds,
            size,
        } => {
            let prefix = &run_prefix(prefix);
            let plan = WatchPlan {
                watchers: informers,
                rate,
                duration: Duration::from_secs(seconds),
                size,
                informers: true,
                churn: true,
            };
            ("mixed", scenarios::watch(&api, prefix, &plan).await)
        }
        Scenario::Scale {
            count,
            size,
            concurrency,
            repeat,
            no_load,
            no_paged,
        } => {
            let mut out = Vec::new();
            if !no_load {
                out.push(scenarios::create(&api, prefix, count, size, concurrency).await);
            }
            let page = (!no_paged).then_some(500);
            out.extend(scenarios::list(&api, repeat, page, None).await);
            ("scale", out)
        }
        Scenario::Codec { .. } => unreachable!("answered above"),
    };
    let results: Vec<_> = results.iter().map(|s| s.to_json()).collect();
    let procs: Vec<_> = procs.into_iter().map(|p| p.finish()).collect();
    stats::print_table(name, &results, &procs);
    if let Some(servers) = extra["write_phase_servers"].as_array() {
        for p in servers {
            println!(
                "server pid {} during the writes: cpu {} s ({} cores avg)",
                p["pid"], p["cpu_seconds"], p["cpu_cores_avg"]
            );
        }
    }
    let encoding = if args.protobuf { "protobuf" } else { "json" };
    let report = json!({"scenario": name, "encoding": encoding, "results": results,
                        "servers": procs, "extra": extra});
    write_json(args.json.as_deref(), &report)
}

/// `prefix` made unique to this run, for scenarios that create their own
/// objects: a second run in the same namespace then creates new objects instead of
/// failing on the first run's names (and seeing no events).
fn run_prefix(prefix: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{prefix}-{:x}", now.as_millis() & 0xff_ffff_ffff)
}

/// The global arguments a child process needs to reach the same server and names.
fn child_args(kubeconfig: &Option<PathBuf>, namespace: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(k) = kubeconfig {
        out.extend(["--kubeconfig".to_owned(), k.display().to_string()]);
    }
    out.extend([
        "--namespace".to_owned(),
        namespace.to_owned(),
        "--prefix".to_owned(),
        prefix.to_owned(),
    ]);
    out
}

fn write_json(path: Option<&std::path::Path>, report: &serde_json::Value) -> Result<(), String> {
    let Some(path) = path else {
        return Ok(());
    };
    let text = serde_json::to_string_pretty(report).expect("JSON");
    if path.as_os_str() == "-" {
        println!("{text}");
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}
