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
