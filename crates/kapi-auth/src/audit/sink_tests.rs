//! The delivery modes, batching, truncation and splitting of `sink.rs`.

use serde_json::json;

use super::*;

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn event(n: usize, level: &str) -> Value {
    json!({"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level,
        "auditID": format!("id-{n}"), "stage": "ResponseComplete"})
}

#[tokio::test]
async fn batch_mode_writes_every_event_off_the_request_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let mut opts = LogOptions::new(&path);
    opts.delivery.mode = Mode::Batch;
    opts.delivery.batch.max_size = 3;
    opts.delivery.batch.max_wait = Duration::from_millis(20);
    let sink = Sink::open(Some(&opts), None, Metrics::default()).unwrap();
    for n in 0..7 {
        sink.send(event(n, "Metadata"));
    }
    for _ in 0..100 {
        if lines(&path).len() == 7 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ids: Vec<_> = lines(&path).iter().map(|e| e["auditID"].clone()).collect();
    assert_eq!(ids.len(), 7, "{ids:?}");
    assert_eq!(ids[6], "id-6");
}

#[tokio::test]
async fn blocking_writes_before_returning_and_strict_fails_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let sink = Sink::open(Some(&LogOptions::new(&path)), None, Metrics::default()).unwrap();
    assert!(sink.send_and_wait(event(1, "Metadata")).await);
    assert_eq!(
        lines(&path).len(),
        1,
        "written before send_and_wait returned"
    );

    // A log that cannot be written: blocking ignores it (counted), strict fails.
    let metrics = Metrics::default();
    let mut full = LogOptions::new("/dev/full");
    let lenient = Sink::open(Some(&full), None, metrics.clone()).unwrap();
    assert!(lenient.send_and_wait(event(2, "Metadata")).await);
    assert_eq!(metrics.value(&ERRORS, &["log"]), 1.0);
    full.delivery.mode = Mode::BlockingStrict;
    let strict = Sink::open(Some(&full), None, metrics.clone()).unwrap();
    assert!(!strict.send_and_wait(event(3, "Metadata")).await);
    assert_eq!(metrics.value(&ERRORS, &["log"]), 2.0);
}

#[tokio::test]
async fn a_full_buffer_drops_and_counts() {
    let metrics = Metrics::default();
    let (tx, _rx) = mpsc::channel(1);
    let sink = Sink {
        backends: Arc::new(vec![Backend {
            stage: Stage::Buffered(tx),
            truncate: None,
        }]),
        metrics: metrics.clone(),
    };
    sink.send(json!({"n": 1}));
    sink.send(json!({"n": 2}));
    assert_eq!(metrics.value(&EVENTS, &[]), 2.0);
    assert_eq!(metrics.value(&ERRORS, &["buffered"]), 1.0);
}

#[test]
fn truncation_drops_objects_then_the_event() {
    let metrics = Metrics::default();
    let t = Some(Truncate {
        max_event: 400,
        max_batch: 1000,
    });
    let mut big = event(1, "RequestResponse");
    big["requestObject"] = json!({"data": "x".repeat(500)});
    big["responseObject"] = json!({"data": "y".repeat(500)});
    let kept = truncated(t, big, &metrics).unwrap();
    assert!(kept.get("requestObject").is_none() && kept.get("responseObject").is_none());
    assert_eq!(kept["annotations"]["audit.k8s.io/truncated"], "true");
    // A Metadata event is not trimmed; too large, it is dropped.
    let mut meta = event(2, "Metadata");
    meta["requestURI"] = json!("z".repeat(500));
    assert!(truncated(t, meta, &metrics).is_none());
    assert_eq!(metrics.value(&ERRORS, &["truncate"]), 1.0);
    // Small events pass untouched.
    let small = event(3, "Request");
    assert_eq!(truncated(t, small.clone(), &metrics), Some(small));
}

#[test]
fn batches_split_at_max_bytes() {
    let events: Vec<Value> = (0..5).map(|n| event(n, "Metadata")).collect();
    let one = serde_json::to_vec(&events[0]).unwrap().len();
    let parts = split(events.clone(), Some(one * 2));
    assert_eq!(
        parts.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![2, 2, 1]
    );
    assert_eq!(split(events, None).len(), 1);
    // An event larger than the limit still goes, alone.
    assert_eq!(split(vec![event(9, "Metadata")], Some(1)).len(), 1);
}

#[tokio::test]
async fn the_throttle_spaces_batches() {
    let mut b = Bucket::new(50.0, 2);
    let start = Instant::now();
    for _ in 0..4 {
        b.take().await;
    }
    // Two at once (the burst), then two more at 50 a second: >= ~40 ms.
    assert!(start.elapsed() >= Duration::from_millis(35));
}

#[test]
fn modes_parse_with_upstreams_message() {
    assert_eq!(
        Mode::parse("log", "blocking-strict").unwrap(),
        Mode::BlockingStrict
    );
    assert_eq!(
        Mode::parse("webhook", "async").unwrap_err(),
        "invalid audit webhook mode async, allowed modes are \"batch,blocking,blocking-strict\""
    );
}
