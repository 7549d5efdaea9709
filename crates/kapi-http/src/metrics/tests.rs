//! The registry's rendering, counters and the metrics flags' policy.

use super::*;

#[test]
fn renders_counters_and_histograms() {
    let m = Metrics::default();
    m.add(&INFLIGHT, &["mutating"], 2.0);
    m.add(&INFLIGHT, &["mutating"], -1.0);
    m.observe(
        &REQUEST_DURATION,
        &["GET", "", "", "v1", "pods", "", "cluster", "apiserver"],
        0.03,
    );
    let text = m.render();
    assert!(text.contains("# TYPE apiserver_current_inflight_requests gauge"));
    assert!(text.contains("apiserver_current_inflight_requests{request_kind=\"mutating\"} 1\n"));
    assert!(text.contains("le=\"0.025\"} 0\n"), "{text}");
    assert!(text.contains("le=\"0.05\"} 1\n"), "{text}");
    assert!(text.contains("le=\"+Inf\"} 1\n"));
    assert!(text.contains("apiserver_request_duration_seconds_count{verb=\"GET\""));
}

#[test]
fn counter_handles_count_into_the_rendered_series() {
    let m = Metrics::default();
    let labels = ["apps", "v1", "deployments"];
    m.add(&WATCH_EVENTS, &labels, 2.0);
    let c = m.counter(&WATCH_EVENTS, &labels);
    let again = m.counter(&WATCH_EVENTS, &labels);
    for _ in 0..3 {
        c.inc();
    }
    again.inc();
    m.add(&WATCH_EVENTS, &labels, 1.0);
    let other = m.counter(&WATCH_EVENTS, &["", "v1", "pods"]);
    other.inc();
    let text = m.render();
    assert!(
        text.contains("# TYPE apiserver_watch_events_total counter\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "apiserver_watch_events_total{group=\"apps\",version=\"v1\",resource=\"deployments\"} 7\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "apiserver_watch_events_total{group=\"\",version=\"v1\",resource=\"pods\"} 1\n"
        ),
        "{text}"
    );
    assert_eq!(m.value(&WATCH_EVENTS, &labels), 7.0);
}

#[test]
fn the_policy_disables_families_and_constrains_label_values() {
    let mut policy = Policy::default();
    policy.disabled.insert(WATCH_EVENTS.name.to_owned());
    let mapping = [(
        "apiserver_request_total,code".to_owned(),
        "200,201".to_owned(),
    )]
    .into_iter()
    .collect();
    policy.allow_labels(&mapping);
    let m = Metrics::with_policy(policy);
    let labels = [
        "GET",
        "",
        "",
        "v1",
        "pods",
        "",
        "namespace",
        "apiserver",
        "200",
    ];
    m.add(&REQUEST_TOTAL, &labels, 1.0);
    let mut teapot = labels;
    teapot[8] = "418";
    m.add(&REQUEST_TOTAL, &teapot, 1.0);
    m.add(&WATCH_EVENTS, &["", "v1", "Pod"], 1.0);
    let text = m.render();
    assert!(text.contains("code=\"200\""), "{text}");
    assert!(text.contains("code=\"unexpected\""), "{text}");
    assert!(!text.contains("code=\"418\""), "{text}");
    assert!(!text.contains(WATCH_EVENTS.name), "{text}");
    assert!(text.contains("disabled_metrics_total 1"), "{text}");
    assert!(
        text.contains("cardinality_enforcement_unexpected_categorizations_total 1"),
        "{text}"
    );
}

#[test]
fn a_request_recorded_under_one_lock_renders_as_two_separate_recordings() {
    let labels = ["GET", "", "", "v1", "pods", "", "resource", "apiserver"];
    let mapping = [("apiserver_request_total,code".to_owned(), "200".to_owned())]
        .into_iter()
        .collect();
    for allow in [false, true] {
        let policy = || {
            let mut p = Policy::default();
            if allow {
                p.allow_labels(&mapping);
            }
            p
        };
        let (one, two) = (
            Metrics::with_policy(policy()),
            Metrics::with_policy(policy()),
        );
        for (took, code) in [(0.03, "200"), (0.3, "404"), (0.001, "200")] {
            one.observe_and_count(&REQUEST_DURATION, &labels, took, &REQUEST_TOTAL, &[code]);
            two.observe(&REQUEST_DURATION, &labels, took);
            let mut all = labels.to_vec();
            all.push(code);
            two.add(&REQUEST_TOTAL, &all, 1.0);
        }
        let text = one.render();
        assert_eq!(text, two.render());
        assert!(
            text.contains("apiserver_request_duration_seconds_count{verb=\"GET\""),
            "{text}"
        );
        let not_allowed = if allow {
            "code=\"unexpected\"} 1"
        } else {
            "code=\"404\"} 1"
        };
        assert!(text.contains(not_allowed), "{text}");
        assert!(text.contains("code=\"200\"} 2"), "{text}");
    }
}

#[test]
fn object_counts_are_sampled_once_per_poll_period() {
    let hourly = Metrics::with_policy(Policy {
        count_poll: Some(std::time::Duration::from_secs(3600)),
        ..Policy::default()
    });
    assert!(hourly.count_due());
    assert!(!hourly.count_due(), "within the period");
    let off = Metrics::with_policy(Policy {
        count_poll: None,
        ..Policy::default()
    });
    assert!(!off.count_due());
    let always = Metrics::default();
    assert!(always.count_due() && always.count_due());
}

#[test]
fn a_histogram_counts_each_value_under_every_bound_at_or_above_it() {
    let m = Metrics::default();
    let labels = ["GET", "", "", "v1", "pods", "", "cluster", "apiserver"];
    // 0.05 is a bound (`le` is inclusive); 120 is above every bound.
    for v in [0.05, 0.051, 120.0] {
        m.observe(&REQUEST_DURATION, &labels, v);
    }
    let text = m.render();
    let bucket = |le: &str| {
        let line = text
            .lines()
            .find(|l| l.contains("_bucket{") && l.contains(&format!("le=\"{le}\"}}")))
            .unwrap_or_else(|| panic!("no le={le} in {text}"));
        line.rsplit(' ').next().unwrap().to_owned()
    };
    assert_eq!(bucket("0.025"), "0");
    assert_eq!(bucket("0.05"), "1");
    assert_eq!(bucket("0.1"), "2");
    assert_eq!(bucket("60"), "2");
    assert_eq!(bucket("+Inf"), "3");
    assert!(text.contains("_count{verb=\"GET\""), "{text}");
    assert!(text.contains("} 3\n"), "{text}");
    assert!(
        text.contains("apiserver_request_duration_seconds_sum{"),
        "{text}"
    );
    assert!(text.contains("} 120.101\n"), "{text}");
    assert_eq!(m.value(&REQUEST_DURATION, &labels), 3.0);
}

#[test]
fn gauge_and_histogram_handles_record_into_the_series_lookups_see() {
    let m = Metrics::default();
    m.add(&INFLIGHT, &["mutating"], 2.0);
    let g = m.gauge(&INFLIGHT, &["mutating"]);
    g.add(3.0);
    m.add(&INFLIGHT, &["mutating"], -1.0);
    assert_eq!(m.value(&INFLIGHT, &["mutating"]), 4.0);
    // The request kinds' series, resolved once, are the same series.
    m.inflight(true).add(-4.0);
    m.inflight(false).add(1.0);
    assert_eq!(m.value(&INFLIGHT, &["mutating"]), 0.0);
    assert_eq!(m.value(&INFLIGHT, &["readOnly"]), 1.0);

    let labels = ["GET", "", "", "v1", "pods", "", "cluster", "apiserver"];
    m.observe(&REQUEST_DURATION, &labels, 0.03);
    let h = m.histogram(&REQUEST_DURATION, &labels);
    h.observe(0.001);
    h.clone().observe(100.0);
    assert_eq!(m.value(&REQUEST_DURATION, &labels), 3.0);
    let text = m.render();
    assert!(
        text.contains("apiserver_current_inflight_requests{request_kind=\"readOnly\"} 1\n"),
        "{text}"
    );
    assert!(text.contains("le=\"0.005\"} 1\n"), "{text}");
    assert!(text.contains("le=\"0.05\"} 2\n"), "{text}");
    assert!(text.contains("le=\"+Inf\"} 3\n"), "{text}");
    assert!(
        text.contains("apiserver_request_duration_seconds_sum{"),
        "{text}"
    );
    assert!(text.contains("} 100.031\n"), "{text}");
}

#[test]
fn handles_take_the_allow_lists_values() {
    let mut policy = Policy::default();
    policy.allow.insert(
        INFLIGHT.name.to_owned(),
        [("request_kind".to_owned(), ["mutating".to_owned()].into())].into(),
    );
    let m = Metrics::with_policy(policy);
    m.gauge(&INFLIGHT, &["readOnly"]).add(2.0);
    assert_eq!(m.value(&INFLIGHT, &["unexpected"]), 2.0);
}

#[test]
fn requests_recorded_on_many_threads_at_once_are_all_counted() {
    let m = Metrics::default();
    let labels = ["LIST", "", "", "v1", "pods", "", "cluster", "apiserver"];
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let m = m.clone();
            std::thread::spawn(move || {
                for i in 0..2_000 {
                    let took = if (i + t) % 2 == 0 { 0.001 } else { 2.0 };
                    m.observe_and_count(&REQUEST_DURATION, &labels, took, &REQUEST_TOTAL, &["200"]);
                    m.add(&INFLIGHT, &["readOnly"], 1.0);
                    m.add(&INFLIGHT, &["readOnly"], -1.0);
                }
            })
        })
        .collect();
    // Renders taken meanwhile see cumulative counts that never decrease.
    for _ in 0..20 {
        let text = m.render();
        let counts: Vec<u64> = text
            .lines()
            .filter(|l| l.starts_with("apiserver_request_duration_seconds_bucket{"))
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    }
    for t in threads {
        t.join().unwrap();
    }
    let mut total = labels.to_vec();
    total.push("200");
    assert_eq!(m.value(&REQUEST_TOTAL, &total), 8_000.0);
    assert_eq!(m.value(&REQUEST_DURATION, &labels), 8_000.0);
    assert_eq!(m.value(&INFLIGHT, &["readOnly"]), 0.0);
    let text = m.render();
    assert!(text.contains("le=\"0.005\"} 4000\n"), "{text}");
    assert!(text.contains("le=\"+Inf\"} 8000\n"), "{text}");
}

#[test]
fn metric_verbs_are_upstreams_normalized_verbs() {
    let info = |verb| request::RequestInfo {
        group: String::new(),
        version: "v1".into(),
        namespace: None,
        resource: "pods".into(),
        name: None,
        subresource: None,
        rest: String::new(),
        verb,
    };
    assert_eq!(metric_verb("GET", Some(&info("list")), false), "LIST");
    assert_eq!(metric_verb("GET", Some(&info("watch")), false), "WATCH");
    assert_eq!(metric_verb("PATCH", Some(&info("patch")), true), "APPLY");
    assert_eq!(metric_verb("PATCH", Some(&info("patch")), false), "PATCH");
    assert_eq!(metric_verb("GET", Some(&info("get")), false), "GET");
    assert_eq!(metric_verb("POST", None, false), "POST");
    assert_eq!(metric_verb("PROPFIND", None, false), "PROPFIND");
    assert_eq!(metric_verb("options", None, false), "OPTIONS");
}
