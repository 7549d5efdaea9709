//! Discovery: `/api`, `/apis`, `/apis/{group}`, the per-group-version resource
//! lists, and aggregated discovery (`apidiscovery.k8s.io` v2 and v2beta1, chosen by
//! the `Accept` header). Everything is derived from the served resources' one
//! declaration (`apis.rs`), the same one the handlers check verbs against.
//! Like upstream, every document is also served as protobuf (or YAML) when the
//! `Accept` header asks for it (client-go itself asks for JSON).

use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};

use crate::server::Server;
use kapi_http::negotiate::{self, error_response, Format};
use kapi_registry::apis::Entry;

fn resource_json(e: &Entry) -> Vec<Value> {
    let d = &e.def;
    let verbs: Vec<&str> = d.verbs.iter().map(|v| v.as_str()).collect();
    let mut main = json!({
        "name": d.resource, "singularName": d.singular, "namespaced": d.namespaced,
        "kind": d.kind, "verbs": verbs,
    });
    if !d.short_names.is_empty() {
        main["shortNames"] = json!(d.short_names);
    }
    if !d.categories.is_empty() {
        main["categories"] = json!(d.categories);
    }
    if let Some(hash) = storage_version_hash(d) {
        main["storageVersionHash"] = json!(hash);
    }
    let mut out = vec![main];
    for s in &d.subresources {
        let verbs: Vec<&str> = s.verbs().iter().map(|v| v.as_str()).collect();
        let mut r = json!({"name": format!("{}/{}", d.resource, s.name()), "singularName": "",
                           "namespaced": d.namespaced, "kind": d.kind, "verbs": verbs});
        if let Some((group, version, kind)) = s.response_kind() {
            // Upstream names the kind's group-version only when it is not
            // the resource's own (pods/eviction: policy/v1; pods/exec: none).
            if (group, version) != (d.group.as_str(), d.version.as_str()) {
                r["group"] = json!(group);
                r["version"] = json!(version);
            }
            r["kind"] = json!(kind);
        }
        out.push(r);
    }
    out
}

/// Upstream's `storageVersionHash`: the first 8 bytes of the SHA-256 of
/// `<group>/<version>/<kind>` of the version the objects are stored at,
/// base64. Resources without storage of their own (reviews, bindings,
/// componentstatuses) have none.
fn storage_version_hash(d: &kapi_registry::ResourceDef) -> Option<String> {
    use base64::Engine as _;
    use sha2::Digest as _;
    let virtual_ = !d.supports(kapi_registry::Verb::Get)
        || (d.group.is_empty() && d.resource == "componentstatuses");
    if virtual_ {
        return None;
    }
    let stored = match (d.group.as_str(), d.resource.as_str()) {
        // Still stored at their beta versions upstream.
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            "apiextensions.k8s.io/v1beta1".to_owned()
        }
        ("discovery.k8s.io", "endpointslices") => "discovery.k8s.io/v1beta1".to_owned(),
        _ => match &d.conversion {
            Some(c) => c.storage_api_version().to_owned(),
            None => d.api_version(),
        },
    };
    let (group, version) = stored.rsplit_once('/').unwrap_or(("", &stored));
    let digest = sha2::Sha256::digest(format!("{group}/{version}/{}", d.kind));
    Some(base64::engine::general_purpose::STANDARD.encode(&digest[..8]))
}

fn resource_list(srv: &Server, group: &str, version: &str) -> Option<Value> {
    let entries = srv.apis.resources_of(group, version);
    if entries.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = entries.iter().flat_map(|e| resource_json(e)).collect();
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs[0].clone()})
}

/// Which aggregated discovery version (and format) the client accepts, if any:
/// the first such entry of `Accept`, as upstream, which ignores plain entries
/// here. `v2beta1` only while the `AggregatedDiscoveryRemoveBetaType` gate is
/// off (upstream 1.33 turns it on, so a v2beta1-only client gets the legacy
/// document).
fn aggregated(req: &Request, v2beta1: bool) -> Option<(Format, &'static str)> {
    let accept = req.headers().get(header::ACCEPT)?.to_str().ok()?;
    for item in accept.split(',') {
        let item = item.replace(' ', "");
        if !item.contains("g=apidiscovery.k8s.io") || !item.contains("as=APIGroupDiscoveryList") {
            continue;
        }
        let format = match item.split(';').next().unwrap_or("") {
            "application/json" => Format::Json,
            "application/yaml" => Format::Yaml,
            "application/vnd.kubernetes.protobuf" => Format::Protobuf,
            _ => continue,
        };
        if item.contains("v=v2beta1") {
            if v2beta1 {
                return Some((format, "v2beta1"));
            }
            continue;
        }
        if item.contains("v=v2") {
            return Some((format, "v2"));
        }
    }
    None
}

/// A legacy discovery document in the format `Accept` prefers.
fn legacy(headers: &HeaderMap, body: &Value) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    match negotiate::negotiate(accept, true) {
        // `/api`'s APIVersions has no apiVersion in JSON; its envelope names v1.
        Ok(a) if a.format == Format::Protobuf && body.get("apiVersion").is_none() => {
            let mut typed = body.clone();
            typed["apiVersion"] = json!("v1");
            negotiate::respond(StatusCode::OK, &typed, a.format)
        }
        Ok(a) => negotiate::respond(StatusCode::OK, body, a.format),
        Err(e) => error_response(&e),
    }
}

fn discovery_resource(e: &Entry) -> Value {
    let d = &e.def;
    let verbs: Vec<&str> = d.verbs.iter().map(|v| v.as_str()).collect();
    let subs: Vec<Value> = d
        .subresources
        .iter()
        .map(|s| {
            let kind = match s.response_kind() {
                Some((group, version, kind)) => {
                    json!({"group": group, "version": version, "kind": kind})
                }
                None => json!({"group": d.group, "version": d.version, "kind": d.kind}),
            };
            let verbs: Vec<&str> = s.verbs().iter().map(|v| v.as_str()).collect();
            json!({"subresource": s.name(), "responseKind": kind, "verbs": verbs})
        })
        .collect();
    let mut r = json!({
        "resource": d.resource,
        "responseKind": {"group": d.group, "version": d.version, "kind": d.kind},
        "scope": if d.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": d.singular,
        "verbs": verbs,
    });
    if !d.short_names.is_empty() {
        r["shortNames"] = json!(d.short_names);
    }
    if !d.categories.is_empty() {
        r["categories"] = json!(d.categories);
    }
    if !subs.is_empty() {
        r["subresources"] = json!(subs);
    }
    r
}

fn aggregated_list(srv: &Server, core: bool, version: &str) -> Value {
    let by_gv = srv.apis.by_group_version();
    let mut items = Vec::new();
    let groups: Vec<(String, Vec<String>)> = if core {
        vec![(String::new(), vec!["v1".to_owned()])]
    } else {
        srv.apis
            .groups()
            .into_iter()
            .map(|g| (g.name, g.versions))
            .collect()
    };
    for (group, versions) in groups {
        let vs: Vec<Value> = versions
            .iter()
            .filter_map(|v| by_gv.get(&(group.clone(), v.clone())).map(|es| (v, es)))
            .map(|(v, es)| {
                let rs: Vec<Value> = es.iter().map(|e| discovery_resource(e)).collect();
                json!({"version": v, "resources": rs, "freshness": "Current"})
            })
            .collect();
        let meta = if group.is_empty() {
            json!({"creationTimestamp": null})
        } else {
            json!({"name": group, "creationTimestamp": null})
        };
        items.push(json!({"metadata": meta, "versions": vs}));
    }
    if !core {
        if let Some(remote) = &srv.remote {
            remote.extend_aggregated(&mut items);
        }
    }
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": format!("apidiscovery.k8s.io/{version}"), "metadata": {}, "items": items})
}

fn aggregated_response(body: &Value, (format, version): (Format, &str)) -> Response {
    let mut resp = negotiate::respond(StatusCode::OK, body, format);
    let media = match format {
        Format::Json => "application/json",
        Format::Yaml => "application/yaml",
        Format::Protobuf => "application/vnd.kubernetes.protobuf",
    };
    let ct = format!("{media};g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(&ct).expect("ascii"),
    );
    resp.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    resp
}

pub async fn api(State(srv): State<Arc<Server>>, req: Request) -> Response {
    if let Some(a) = aggregated(&req, srv.config.discovery_v2beta1) {
        return aggregated_response(&aggregated_list(&srv, true, a.1), a);
    }
    let body = json!({"kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": srv.config.advertise_address}]});
    legacy(req.headers(), &body)
}

pub async fn apis(State(srv): State<Arc<Server>>, req: Request) -> Response {
    if let Some(a) = aggregated(&req, srv.config.discovery_v2beta1) {
        return aggregated_response(&aggregated_list(&srv, false, a.1), a);
    }
    let mut groups: Vec<Value> = srv
        .apis
        .groups()
        .iter()
        .map(|g| group_json(&g.name, &g.versions))
        .collect();
    if let Some(remote) = &srv.remote {
        remote.extend_group_list(&mut groups);
    }
    let body = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups});
    legacy(req.headers(), &body)
}

pub async fn group(
    State(srv): State<Arc<Server>>,
    Path(group): Path<String>,
    headers: HeaderMap,
) -> Response {
    match srv.apis.groups().into_iter().find(|g| g.name == group) {
        Some(g) => {
            let mut body = group_json(&g.name, &g.versions);
            body["kind"] = json!("APIGroup");
            body["apiVersion"] = json!("v1");
            legacy(&headers, &body)
        }
        // No server of the chain serves the group: Go's plain 404.
        None => crate::handlers::plain_not_found(),
    }
}

pub async fn core_v1(State(srv): State<Arc<Server>>, headers: HeaderMap) -> Response {
    match resource_list(&srv, "", "v1") {
        Some(body) => legacy(&headers, &body),
        None => error_response(&kapi_http::request::not_found()),
    }
}

pub async fn group_version(
    State(srv): State<Arc<Server>>,
    Path((group, version)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    match resource_list(&srv, &group, &version) {
        Some(body) => legacy(&headers, &body),
        None if srv.apis.groups().iter().any(|g| g.name == group) => {
            error_response(&kapi_http::request::not_found())
        }
        None => crate::handlers::plain_not_found(),
    }
}
