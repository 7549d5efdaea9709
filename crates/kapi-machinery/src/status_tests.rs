use super::*;
use crate::validation::{FieldError, FieldPath};

fn cm() -> GroupResource {
    GroupResource::new("", "configmaps")
}

#[test]
fn group_resource_and_kind_display() {
    assert_eq!(cm().to_string(), "configmaps");
    assert_eq!(
        GroupResource::new("apps", "deployments").to_string(),
        "deployments.apps"
    );
    assert_eq!(
        GroupKind::new("apps", "Deployment").to_string(),
        "Deployment.apps"
    );
    assert_eq!(GroupKind::from(("", "ConfigMap")).to_string(), "ConfigMap");
}

#[test]
fn reasons_round_trip() {
    for &r in ALL_REASONS {
        assert_eq!(Reason::parse(r.as_str()), r);
    }
    assert_eq!(Reason::Expired.as_str(), "Expired");
    assert_eq!(Reason::StoreReadError.as_str(), "StorageReadError");
    assert_eq!(Reason::parse("Bogus"), Reason::Unknown);
}

#[test]
fn not_found_status_json() {
    let e = ApiError::not_found(cm(), "x");
    assert_eq!(e.to_string(), r#"configmaps "x" not found"#);
    assert!(e.is_not_found());
    let want = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404}"#;
    assert_eq!(e.to_status().to_string(), want);
    let apps = ApiError::not_found(("apps", "deployments"), "web");
    let want = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \"web\" not found","reason":"NotFound","details":{"name":"web","group":"apps","kind":"deployments"},"code":404}"#;
    assert_eq!(apps.to_status().to_string(), want);
}

#[test]
fn already_exists_and_conflict() {
    let e = ApiError::already_exists(cm(), "x");
    assert_eq!(
        (e.code, e.reason, e.message.as_str()),
        (
            409,
            Reason::AlreadyExists,
            r#"configmaps "x" already exists"#
        )
    );
    let e = ApiError::optimistic_lock_conflict(cm(), "x");
    assert_eq!(e.code, 409);
    assert_eq!(e.reason.as_str(), "Conflict");
    assert_eq!(
        e.message,
        r#"Operation cannot be fulfilled on configmaps "x": the object has been modified; please apply your changes to the latest version and try again"#
    );
    let e = ApiError::generate_name_conflict(cm(), "x-abcde", 1);
    assert_eq!(
        e.message,
        r#"configmaps "x-abcde" already exists, the server was not able to generate a unique name for the object"#
    );
    assert_eq!(e.to_status()["details"]["retryAfterSeconds"], 1);
}

#[test]
fn invalid_single_error_json() {
    let errs = vec![FieldError::invalid(
        &FieldPath::new("metadata").child("name"),
        "A_b",
        "bad name",
    )];
    let e = ApiError::invalid(("", "ConfigMap"), "A_b", &errs);
    let want = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"A_b\" is invalid: metadata.name: Invalid value: \"A_b\": bad name","reason":"Invalid","details":{"name":"A_b","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"A_b\": bad name","field":"metadata.name"}]},"code":422}"#;
    assert_eq!(e.to_status().to_string(), want);
    assert!(e.is_invalid());
}

#[test]
fn invalid_aggregates_several_errors() {
    let spec = FieldPath::new("spec");
    let errs = vec![
        FieldError::required(&spec.child("replicas"), ""),
        FieldError::not_supported(&spec.child("strategy"), "X", &["A", "B"]),
    ];
    let e = ApiError::invalid(("apps", "Deployment"), "web", &errs);
    assert_eq!(
        e.message,
        r#"Deployment.apps "web" is invalid: [spec.replicas: Required value, spec.strategy: Unsupported value: "X": supported values: "A", "B"]"#
    );
    let d = e.details.as_ref().unwrap();
    assert_eq!(
        (d.group.as_str(), d.kind.as_str(), d.causes.len()),
        ("apps", "Deployment", 2)
    );
    assert_eq!(
        d.causes[0],
        Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value".into(),
            field: "spec.replicas".into()
        }
    );
    assert_eq!(d.causes[1].reason, "FieldValueNotSupported");
    let none = ApiError::invalid(("", "Pod"), "p", &vec![]);
    assert_eq!(none.message, r#"Pod "p" is invalid"#);
}

type Case = (ApiError, u16, &'static str, &'static str);

fn check_all(cases: Vec<Case>) {
    for (e, code, reason, msg) in cases {
        assert_eq!(
            (e.code, e.reason.as_str(), e.message.as_str()),
            (code, reason, msg)
        );
        assert_eq!(e.to_string(), msg);
        let s = e.to_status();
        assert_eq!(
            (s["code"].as_u64(), s["reason"].as_str()),
            (Some(code as u64), Some(reason))
        );
    }
}

#[test]
fn client_error_constructors() {
    let cases: Vec<Case> = vec![
        (ApiError::bad_request("nope"), 400, "BadRequest", "nope"),
        (
            ApiError::unauthorized(""),
            401,
            "Unauthorized",
            "not authorized",
        ),
        (ApiError::unauthorized("who?"), 401, "Unauthorized", "who?"),
        (
            ApiError::forbidden(cm(), "x", "no way"),
            403,
            "Forbidden",
            r#"configmaps "x" is forbidden: no way"#,
        ),
        (
            ApiError::forbidden(cm(), "", "no way"),
            403,
            "Forbidden",
            "configmaps is forbidden: no way",
        ),
        (
            ApiError::forbidden(("", ""), "", "no way"),
            403,
            "Forbidden",
            "forbidden: no way",
        ),
        (
            ApiError::method_not_supported(cm(), "watch"),
            405,
            "MethodNotAllowed",
            r#"watch is not supported on resources of kind "configmaps""#,
        ),
        (ApiError::not_acceptable("m"), 406, "NotAcceptable", "m"),
        (
            ApiError::not_acceptable_types(&["application/json", "application/yaml"]),
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml",
        ),
        (
            ApiError::request_entity_too_large("limit is 3145728"),
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
        ),
        (
            ApiError::unsupported_media_type(&["application/json"]),
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json",
        ),
    ];
    check_all(cases);
}

#[test]
fn server_error_constructors() {
    let cases: Vec<Case> = vec![
        (ApiError::gone("gone"), 410, "Gone", "gone"),
        (
            ApiError::resource_expired("too old resource version: 1 (5)"),
            410,
            "Expired",
            "too old resource version: 1 (5)",
        ),
        (
            ApiError::internal("disk on fire"),
            500,
            "InternalError",
            "Internal error occurred: disk on fire",
        ),
        (
            ApiError::service_unavailable("later"),
            503,
            "ServiceUnavailable",
            "later",
        ),
        (
            ApiError::timeout("request did not complete within 60s", 0),
            504,
            "Timeout",
            "Timeout: request did not complete within 60s",
        ),
        (
            ApiError::server_timeout(cm(), "get", 2),
            500,
            "ServerTimeout",
            "The get operation against configmaps could not be completed at this time, please try again.",
        ),
        (
            ApiError::too_many_requests("slow down", 1),
            429,
            "TooManyRequests",
            "slow down",
        ),
        (
            ApiError::too_many_requests_error("slow down"),
            429,
            "TooManyRequests",
            "Too many requests: slow down",
        ),
    ];
    check_all(cases);
}

#[test]
fn status_json_omits_empty_details() {
    let s = ApiError::bad_request("x").to_status().to_string();
    assert_eq!(
        s,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"x","reason":"BadRequest","code":400}"#
    );
    let s = ApiError::timeout("t", 0).to_status().to_string();
    assert_eq!(
        s,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: t","reason":"Timeout","details":{},"code":504}"#
    );
    let s = ApiError::too_many_requests("m", 3).to_status().to_string();
    assert!(s.contains(r#""details":{"retryAfterSeconds":3}"#));
    let s = ApiError::internal("boom").to_status().to_string();
    assert!(s.contains(r#""details":{"causes":[{"message":"boom"}]}"#));
    let s = ApiError::new(500, Reason::Unknown, "")
        .to_status()
        .to_string();
    assert_eq!(
        s,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":500}"#
    );
}

#[test]
fn success_status_json() {
    let d = Details {
        name: "x".into(),
        kind: "configmaps".into(),
        uid: "123".into(),
        ..Details::default()
    };
    let want = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"x","kind":"configmaps","uid":"123"}}"#;
    assert_eq!(success_status(&d).to_string(), want);
}

#[test]
fn from_status_round_trip() {
    let errs = vec![FieldError::required(&FieldPath::new("data"), "")];
    for e in [
        ApiError::invalid(("", "ConfigMap"), "c", &errs),
        ApiError::not_found(cm(), "x"),
        ApiError::too_many_requests("m", 2),
    ] {
        assert_eq!(ApiError::from_status(&e.to_status()), Some(e));
    }
    assert_eq!(
        ApiError::from_status(&serde_json::json!({"kind": "Pod"})),
        None
    );
}
