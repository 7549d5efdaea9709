//! The `paths` of the documents (swagger 2.0 form): one path item per URL a
//! served resource answers, one operation per verb, named and annotated as
//! upstream (`operationId` like `patchCoreV1NamespacedPod`, `x-kubernetes-action`,
//! `x-kubernetes-group-version-kind`, tags like `core_v1`).
//!
//! Invariants: only verbs the `ResourceDef` supports appear; every write
//! operation (POST/PUT/PATCH, subresources included) declares `dryRun`,
//! `fieldManager` and `fieldValidation`; path parameters and `pretty` sit on the
//! path item, everything else on the operation.
//! Where to look next: `params.rs` (parameter definitions), `v3.rs` (3.0 form).

use kapi_registry::{ResourceDef, Subresource, Verb};
use serde_json::{json, Map, Value};

use super::defs::{gvk, REF_PREFIX};
use super::params;

const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";
const EVICTION: &str = "io.k8s.api.policy.v1.Eviction";
const BINDING: &str = "io.k8s.api.core.v1.Binding";
const TOKEN_REQUEST: &str = "io.k8s.api.authentication.v1.TokenRequest";

const ANY: &[&str] = &["*/*"];
pub const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];
/// What built-in object endpoints produce, protobuf included, as upstream.
const OBJECT: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];
const LISTS: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];
const WATCH: &[&str] = LISTS;

/// Naming of one group-version: URL prefix, operationId infix, tag.
pub struct GroupVersion {
    pub group: String,
    pub version: String,
    /// `/api/v1`, `/apis/apps/v1`.
    pub prefix: String,
    /// `CoreV1`, `AppsV1`, `RbacAuthorizationV1`.
    pub op_infix: String,
    /// `core_v1`, `apps_v1`, `rbacAuthorization_v1`.
    pub tag: String,
    /// `Core`, `Apps`, `RbacAuthorization`.
    pub group_word: String,
    /// `core`, `apps`, `rbacAuthorization`.
    pub tag_group: String,
}

fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

impl GroupVersion {
    pub fn new(group: &str, version: &str) -> GroupVersion {
        let short = group.strip_suffix(".k8s.io").unwrap_or(group);
        let parts: Vec<&str> = short.split(['.', '-']).filter(|p| !p.is_empty()).collect();
        let camel: String = parts.iter().map(|p| upper_first(p)).collect();
        let (prefix, group_word) = if group.is_empty() {
            (format!("/api/{version}"), "Core".to_string())
        } else {
            (format!("/apis/{group}/{version}"), camel)
        };
        let tag_group = match group_word.chars().next() {
            Some(c) => format!("{}{}", c.to_lowercase(), &group_word[c.len_utf8()..]),
            None => String::new(),
        };
        GroupVersion {
            group: group.to_string(),
            version: version.to_string(),
            prefix,
            op_infix: format!("{group_word}{}", upper_first(version)),
            tag: format!("{tag_group}_{version}"),
            group_word,
            tag_group,
        }
    }

    /// The index key of the group-version's v3 document (`api/v1`, `apis/apps/v1`).
    pub fn doc_key(&self) -> String {
        self.prefix.trim_start_matches('/').to_string()
    }
}

/// A served resource with the definitions of its kind and list kind.
pub struct Target<'a> {
    pub res: &'a ResourceDef,
    pub def: String,
    pub list_def: String,
    /// A custom resource: upstream's custom resource handler takes and
    /// gives JSON and YAML only, and no strategic merge patch.
    pub custom: bool,
}

/// What custom resource endpoints consume and produce.
const CUSTOM_MEDIA: &[&str] = &["application/json", "application/yaml"];
const CUSTOM_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// The ops of a custom resource as upstream's builder writes them.
fn customize(ops: Vec<Op>) -> Vec<Op> {
    ops.into_iter()
        .map(|mut op| {
            op.produces = CUSTOM_MEDIA;
            op.consumes = if op.action == "patch" {
                CUSTOM_PATCH_TYPES
            } else {
                CUSTOM_MEDIA
            };
            if op.action == "list" {
                op.description =
                    op.description
                        .replacen("list or watch objects", "list objects", 1);
            }
            op
        })
        .collect()
}

struct Op {
    method: &'static str,
    action: &'static str,
    id: String,
    description: String,
    params: Vec<Value>,
    consumes: &'static [&'static str],
    produces: &'static [&'static str],
    responses: Vec<(&'static str, String)>,
    gvk: Value,
}

impl Op {
    fn new(method: &'static str, action: &'static str, id: String, description: String) -> Op {
        Op {
            method,
            action,
            id,
            description,
            params: Vec::new(),
            consumes: ANY,
            produces: OBJECT,
            responses: Vec::new(),
            gvk: Value::Null,
        }
    }

    fn returns(mut self, codes: &[&'static str], def: &str) -> Op {
        self.responses
            .extend(codes.iter().map(|c| (*c, def.to_string())));
        self
    }

    fn render(self, tag: &str) -> Value {
        let mut responses = Map::new();
        for (code, def) in self.responses {
            let mut response = Map::new();
            response.insert("description".into(), code_text(code).into());
            let schema = [(
                "$ref".to_string(),
                Value::String(format!("{REF_PREFIX}{def}")),
            )];
            response.insert("schema".into(), Value::Object(schema.into_iter().collect()));
            responses.insert(code.into(), Value::Object(response));
        }
        responses.insert("401".into(), json!({"description": "Unauthorized"}));
        let strings = |items: &[&str]| items.iter().map(|s| Value::from(*s)).collect();
        let fields: [(&str, Value); 10] = [
            ("consumes", strings(self.consumes)),
            ("description", self.description.into()),
            ("operationId", self.id.into()),
            ("parameters", Value::Array(self.params)),
            ("produces", strings(self.produces)),
            ("responses", Value::Object(responses)),
            ("schemes", strings(&["https"])),
            ("tags", strings(&[tag])),
            ("x-kubernetes-action", self.action.into()),
            ("x-kubernetes-group-version-kind", self.gvk),
        ];
        Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }
}

fn code_text(code: &str) -> &'static str {
    match code {
        "201" => "Created",
        "202" => "Accepted",
        _ => "OK",
    }
}

/// Adds a path item with `params` on the path and `ops` as its operations.
fn insert(
    out: &mut Map<String, Value>,
    gv: &GroupVersion,
    path: String,
    params: Vec<Value>,
    ops: Vec<Op>,
) {
    if ops.is_empty() {
        return;
    }
    let mut item = Map::new();
    item.insert("parameters".into(), Value::Array(params));
    for op in ops {
        item.insert(op.method.into(), op.render(&gv.tag));
    }
    out.insert(path, Value::Object(item));
}

/// Adds every path of one served resource to `out`.
pub fn resource(out: &mut Map<String, Value>, gv: &GroupVersion, t: &Target) {
    let r = t.res;
    let scope = if r.namespaced { "Namespaced" } else { "" };
    let ns_params = || match r.namespaced {
        true => vec![params::namespace(), params::pretty()],
        false => vec![params::pretty()],
    };
    let coll = match r.namespaced {
        true => format!("{}/namespaces/{{namespace}}/{}", gv.prefix, r.resource),
        false => format!("{}/{}", gv.prefix, r.resource),
    };
    let name_param = || params::path("name", &format!("name of the {}", r.kind));
    let with_name = |mut p: Vec<Value>| {
        p.insert(0, name_param());
        p
    };
    let kind_gvk = gvk(&r.group, &r.version, &r.kind);
    let media = |ops: Vec<Op>| if t.custom { customize(ops) } else { ops };
    insert(
        out,
        gv,
        coll.clone(),
        ns_params(),
        media(collection_ops(gv, t, scope, &kind_gvk)),
    );
    insert(
        out,
        gv,
        format!("{coll}/{{name}}"),
        with_name(ns_params()),
        media(item_ops(gv, t, scope, &kind_gvk)),
    );
    for sub in &r.subresources {
        let path = format!("{coll}/{{name}}/{}", sub.name());
        insert(
            out,
            gv,
            path,
            with_name(ns_params()),
            media(sub_ops(gv, t, scope, sub)),
        );
    }
    watch_paths(out, gv, t, scope, &kind_gvk, ns_params(), name_param());
}

fn op_id(
    verb: &str,
    gv: &GroupVersion,
    collection: bool,
    scope: &str,
    kind: &str,
    tail: &str,
) -> String {
    let coll = if collection { "Collection" } else { "" };
    format!("{verb}{}{coll}{scope}{kind}{tail}", gv.op_infix)
}

fn collection_ops(gv: &GroupVersion, t: &Target, scope: &str, kind_gvk: &Value) -> Vec<Op> {
    let (r, kind) = (t.res, t.res.kind.as_str());
    let mut ops = Vec::new();
    if r.supports(Verb::List) {
        let mut op = Op::new(
            "get",
            "list",
            op_id("list", gv, false, scope, kind, ""),
            format!("list or watch objects of kind {kind}"),
        );
        op.params = params::list();
        op.produces = LISTS;
        ops.push(op.returns(&["200"], &t.list_def));
    }
    if r.supports(Verb::Create) {
        let mut op = Op::new(
            "post",
            "post",
            op_id("create", gv, false, scope, kind, ""),
            format!("create a {kind}"),
        );
        op.params = vec![params::body(&t.def, true)];
        op.params.extend(params::write());
        ops.push(op.returns(&["200", "201", "202"], &t.def));
    }
    if r.supports(Verb::DeleteCollection) {
        let mut op = Op::new(
            "delete",
            "deletecollection",
            op_id("delete", gv, true, scope, kind, ""),
            format!("delete collection of {kind}"),
        );
        op.params = vec![params::body(DELETE_OPTIONS, false)];
        op.params.extend(params::delete_collection());
        ops.push(op.returns(&["200"], STATUS));
    }
    ops.iter_mut().for_each(|op| op.gvk = kind_gvk.clone());
    ops
}

fn item_ops(gv: &GroupVersion, t: &Target, scope: &str, kind_gvk: &Value) -> Vec<Op> {
    let (r, kind) = (t.res, t.res.kind.as_str());
    let mut ops = Vec::new();
    if r.supports(Verb::Get) {
        let op = Op::new(
            "get",
            "get",
            op_id("read", gv, false, scope, kind, ""),
            format!("read the specified {kind}"),
        );
        ops.push(op.returns(&["200"], &t.def));
    }
    if r.supports(Verb::Update) {
        ops.push(update(gv, scope, kind, "", "the specified", &t.def));
    }
    if r.supports(Verb::Patch) {
        ops.push(patch(gv, scope, kind, "", "the specified", &t.def));
    }
    if r.supports(Verb::Delete) {
        let mut op = Op::new(
            "delete",
            "delete",
            op_id("delete", gv, false, scope, kind, ""),
            format!("delete a {kind}"),
        );
        op.params = vec![params::body(DELETE_OPTIONS, false)];
        op.params.extend(params::delete());
        // Pods come back as the (terminating) object; other kinds as a Status.
        let returned = if kind == "Pod" {
            t.def.as_str()
        } else {
            STATUS
        };
        ops.push(op.returns(&["200", "202"], returned));
    }
    ops.iter_mut().for_each(|op| op.gvk = kind_gvk.clone());
    ops
}

fn update(gv: &GroupVersion, scope: &str, kind: &str, sub: &str, what: &str, def: &str) -> Op {
    let id = op_id("replace", gv, false, scope, kind, sub);
    let mut op = Op::new("put", "put", id, format!("replace {what} {kind}"));
    op.params = vec![params::body(def, true)];
    op.params.extend(params::write());
    op.returns(&["200", "201"], def)
}

fn patch(gv: &GroupVersion, scope: &str, kind: &str, sub: &str, what: &str, def: &str) -> Op {
    let id = op_id("patch", gv, false, scope, kind, sub);
    let mut op = Op::new(
        "patch",
        "patch",
        id,
        format!("partially update {what} {kind}"),
    );
    op.params = vec![params::body(PATCH, true)];
    op.params.extend(params::patch());
    op.consumes = PATCH_TYPES;
    op.returns(&["200", "201"], def)
}

fn sub_ops(gv: &GroupVersion, t: &Target, scope: &str, sub: &Subresource) -> Vec<Op> {
    let kind = t.res.kind.as_str();
    let (tail, def, sub_gvk) = match sub {
        // The connect subresources (log, exec, attach, portforward, proxy)
        // have no operations in kapi's documents yet.
        Subresource::Log
        | Subresource::Exec
        | Subresource::Attach
        | Subresource::PortForward
        | Subresource::Proxy { .. } => return Vec::new(),
        Subresource::Status => (
            "Status",
            t.def.as_str(),
            gvk(&t.res.group, &t.res.version, kind),
        ),
        Subresource::Approval => (
            "Approval",
            t.def.as_str(),
            gvk(&t.res.group, &t.res.version, kind),
        ),
        Subresource::Scale { .. } => ("Scale", SCALE, gvk("autoscaling", "v1", "Scale")),
        Subresource::Finalize => (
            "Finalize",
            t.def.as_str(),
            gvk(&t.res.group, &t.res.version, kind),
        ),
        Subresource::Eviction => ("Eviction", EVICTION, gvk("policy", "v1", "Eviction")),
        Subresource::Binding => ("Binding", BINDING, gvk("", "v1", "Binding")),
        Subresource::EphemeralContainers => (
            "EphemeralContainers",
            t.def.as_str(),
            gvk(&t.res.group, &t.res.version, kind),
        ),
        Subresource::Token => (
            "Token",
            TOKEN_REQUEST,
            gvk("authentication.k8s.io", "v1", "TokenRequest"),
        ),
    };
    let what = format!("{} of the specified", sub.name());
    let mut ops = Vec::new();
    for verb in sub.verbs() {
        match verb {
            Verb::Get => {
                let id = op_id("read", gv, false, scope, kind, tail);
                let op = Op::new("get", "get", id, format!("read {what} {kind}"));
                ops.push(op.returns(&["200"], def));
            }
            Verb::Update => ops.push(update(gv, scope, kind, tail, &what, def)),
            Verb::Patch => ops.push(patch(gv, scope, kind, tail, &what, def)),
            Verb::Create => {
                let id = op_id("create", gv, false, scope, kind, tail);
                let mut op = Op::new(
                    "post",
                    "post",
                    id,
                    format!("create {} of a {kind}", sub.name()),
                );
                op.params = vec![params::body(def, true)];
                op.params.extend(params::write());
                ops.push(op.returns(&["200", "201", "202"], def));
            }
            _ => {}
        }
    }
    ops.iter_mut().for_each(|op| op.gvk = sub_gvk.clone());
    ops
}

/// `GET {prefix}/{resource}`: the list across all namespaces.
fn list_all_namespaces(
    out: &mut Map<String, Value>,
    gv: &GroupVersion,
    t: &Target,
    kind_gvk: &Value,
) {
    let (r, kind) = (t.res, t.res.kind.as_str());
    if !r.namespaced || !r.supports(Verb::List) {
        return;
    }
    let id = op_id("list", gv, false, "", kind, "ForAllNamespaces");
    let mut op = Op::new(
        "get",
        "list",
        id,
        format!("list or watch objects of kind {kind}"),
    );
    (op.params, op.produces, op.gvk) = (params::list(), LISTS, kind_gvk.clone());
    let path = format!("{}/{}", gv.prefix, r.resource);
    let ops = vec![op.returns(&["200"], &t.list_def)];
    insert(out, gv, path, vec![params::pretty()], ops);
}

/// The all-namespaces list and the deprecated `/watch/` paths.
fn watch_paths(
    out: &mut Map<String, Value>,
    gv: &GroupVersion,
    t: &Target,
    scope: &str,
    kind_gvk: &Value,
    ns_params: Vec<Value>,
    name_param: Value,
) {
    let (r, kind) = (t.res, t.res.kind.as_str());
    list_all_namespaces(out, gv, t, kind_gvk);
    if !r.supports(Verb::Watch) {
        return;
    }
    let watch_op = |action: &'static str, id: String, description: String| {
        let mut op = Op::new("get", action, id, description);
        (op.params, op.produces, op.gvk) = (params::list(), WATCH, kind_gvk.clone());
        op.returns(&["200"], WATCH_EVENT)
    };
    let coll = match r.namespaced {
        true => format!(
            "{}/watch/namespaces/{{namespace}}/{}",
            gv.prefix, r.resource
        ),
        false => format!("{}/watch/{}", gv.prefix, r.resource),
    };
    let list_doc = format!("watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list operation instead.");
    let one_doc = format!("watch changes to an object of kind {kind}. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.");
    let op = watch_op(
        "watchlist",
        op_id("watch", gv, false, scope, kind, "List"),
        list_doc.clone(),
    );
    insert(out, gv, coll.clone(), ns_params.clone(), vec![op]);
    let op = watch_op("watch", op_id("watch", gv, false, scope, kind, ""), one_doc);
    let mut item_params = ns_params;
    item_params.insert(0, name_param);
    insert(out, gv, format!("{coll}/{{name}}"), item_params, vec![op]);
    if r.namespaced {
        let op = watch_op(
            "watchlist",
            op_id("watch", gv, false, "", kind, "ListForAllNamespaces"),
            list_doc,
        );
        let path = format!("{}/watch/{}", gv.prefix, r.resource);
        insert(out, gv, path, vec![params::pretty()], vec![op]);
    }
}

/// `GET {prefix}/`: the group-version's APIResourceList.
pub fn resources_discovery(out: &mut Map<String, Value>, gv: &GroupVersion) {
    let id = format!("get{}APIResources", gv.op_infix);
    let mut op = Op::new("get", "", id, "get available resources".into());
    (op.consumes, op.produces) = (OBJECT, OBJECT);
    let op = op.returns(
        &["200"],
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
    );
    let mut rendered = op.render(&gv.tag);
    if let Some(map) = rendered.as_object_mut() {
        map.shift_remove("x-kubernetes-action");
        map.shift_remove("x-kubernetes-group-version-kind");
    }
    let item = [("get".to_string(), rendered)].into_iter().collect();
    out.insert(format!("{}/", gv.prefix), Value::Object(item));
}

/// A discovery path item (`/api/`, `/apis/`, `/apis/<group>/`).
pub fn discovery(path: &str, op_id: &str, tag: &str, def: &str) -> (String, Value) {
    let op = json!({
        "consumes": OBJECT,
        "description": if path == "/api/" || path == "/apis/" { "get available API versions" } else { "get information of a group" },
        "operationId": op_id,
        "produces": OBJECT,
        "responses": {
            "200": {"description": "OK", "schema": {"$ref": format!("{REF_PREFIX}{def}")}},
            "401": {"description": "Unauthorized"},
        },
        "schemes": ["https"],
        "tags": [tag],
    });
    (path.to_string(), json!({"get": op}))
}
