//! Options parsing, validation and the kubelet URLs they become.

use super::*;
use serde_json::json;

fn pod() -> Value {
    json!({"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "a"}, {"name": "b"}],
        "initContainers": [{"name": "init"}]
    }})
}

#[test]
fn the_container_is_defaulted_or_the_choices_listed() {
    let one = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "only"}]}});
    assert_eq!(container(&one, None).unwrap(), "only");
    let e = container(&pod(), None).unwrap_err();
    assert_eq!(
        e.message,
        "a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [init]"
    );
    assert_eq!(container(&pod(), Some("init")).unwrap(), "init");
    let e = container(&pod(), Some("zz")).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (400, "container zz is not valid for pod p")
    );
}

#[test]
fn log_options_become_kubelet_parameters() {
    let p = Params::parse(Some(
        "follow=true&timestamps=1&tailLines=10&limitBytes=5&sinceSeconds=3&previous=false",
    ));
    let o = LogOptions::parse(&p, "p").unwrap();
    assert_eq!(
        o.kubelet_path("ns", "p", "c"),
        "/containerLogs/ns/p/c?follow=true&timestamps=true&sinceSeconds=3&tailLines=10&limitBytes=5"
    );
    let p = Params::parse(Some("sinceTime=2024-01-02T03:04:05Z"));
    let o = LogOptions::parse(&p, "p").unwrap();
    assert_eq!(
        o.kubelet_path("ns", "p", "c"),
        "/containerLogs/ns/p/c?sinceTime=2024-01-02T03%3A04%3A05Z"
    );
}

#[test]
fn log_options_are_validated_as_upstream() {
    let e = LogOptions::parse(&Params::parse(Some("tailLines=-1")), "p").unwrap_err();
    assert_eq!(e.code, 422);
    assert!(
        e.message
            .contains("tailLines: Invalid value: -1: must be greater than or equal to 0"),
        "{}",
        e.message
    );
    let e = LogOptions::parse(
        &Params::parse(Some("sinceSeconds=5&sinceTime=2024-01-02T03:04:05Z")),
        "p",
    )
    .unwrap_err();
    assert!(
        e.message
            .contains("at most one of `sinceTime` or `sinceSeconds` may be specified"),
        "{}",
        e.message
    );
    let e = LogOptions::parse(&Params::parse(Some("follow=maybe")), "p").unwrap_err();
    assert_eq!(e.code, 400);
}

#[test]
fn exec_attach_and_portforward_paths() {
    let p = Params::parse(Some(
        "command=sh&command=-c&command=echo+hi&stdin=true&stdout=true&tty=true&container=a",
    ));
    assert_eq!(
        stream_path(StreamKind::Exec, &p, "ns", "p", "a").unwrap(),
        "/exec/ns/p/a?input=1&output=1&tty=1&command=sh&command=-c&command=echo+hi"
    );
    let p = Params::parse(Some("stdout=true&stderr=true"));
    assert_eq!(
        stream_path(StreamKind::Attach, &p, "ns", "p", "a").unwrap(),
        "/attach/ns/p/a?output=1&error=1"
    );
    let p = Params::parse(Some("ports=8080&ports=9090"));
    assert_eq!(
        stream_path(StreamKind::PortForward, &p, "ns", "p", "").unwrap(),
        "/portForward/ns/p?port=8080&port=9090"
    );
    let none = Params::parse(Some("command=ls"));
    assert_eq!(
        stream_path(StreamKind::Exec, &none, "ns", "p", "a")
            .unwrap_err()
            .message,
        "you must specify at least 1 of stdin, stdout, stderr"
    );
}
