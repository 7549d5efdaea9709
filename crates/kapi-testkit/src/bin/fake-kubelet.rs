//! The fake kubelet as a process, for suites that drive real binaries
//! (`scripts/kubectl-suite`): `fake-kubelet --listen ADDR --cert FILE --key FILE
//! [--client-ca FILE] [--workdir DIR] [--pod-http ADDR]`. Runs until killed.

use std::collections::HashMap;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut flags = HashMap::new();
    for pair in args.chunks(2) {
        if let [k, v] = pair {
            flags.insert(k.trim_start_matches('-').to_owned(), v.clone());
        }
    }
    let read = |k: &str| {
        flags
            .get(k)
            .map(|p| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p}: {e}")))
    };
    let addr = |k: &str| {
        flags
            .get(k)
            .map(|a| a.parse().unwrap_or_else(|e| panic!("--{k} {a}: {e}")))
    };
    let opts = kapi_testkit::kubelet::KubeletOptions {
        listen: addr("listen").expect("--listen"),
        cert_pem: read("cert").expect("--cert"),
        key_pem: read("key").expect("--key"),
        client_ca_pem: read("client-ca"),
        workdir: flags
            .get("workdir")
            .map(Into::into)
            .unwrap_or_else(|| ".".into()),
    };
    let _kubelet = kapi_testkit::kubelet::serve(opts)
        .await
        .expect("fake kubelet");
    let _pod = match addr("pod-http") {
        Some(a) => Some(
            kapi_testkit::kubelet::serve_pod_http(a)
                .await
                .expect("pod endpoint"),
        ),
        None => None,
    };
    eprintln!("fake kubelet ready");
    std::future::pending::<()>().await;
}
