//! Generates the descriptor table (`$OUT_DIR/descriptors.rs`) from the sources
//! of two dependencies cargo has already unpacked:
//!
//! - `k8s-pb`: the prost-generated structs of every `k8s.io/api` and
//!   `k8s.io/apimachinery` message. Each field carries
//!   `#[prost(<type>, <label>, tag = "N")]` and a Rust type naming the message
//!   it holds; each resource module has `impl crate::Resource` blocks naming its
//!   API group and version.
//! - `k8s-openapi`: the serde names of every field (`"podIP" => Field::Key_pod_ip`),
//!   because prost snake_cases the proto field names, which upstream keeps equal
//!   to the JSON names, and `pod_ip` does not say `podIP`.
//!
//! Nothing of either source is copied into the project: the table is rebuilt
//! from the pinned dependency versions on every clean build.

#[path = "build_list_docs.rs"]
mod list_docs;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const K8S_PB: &str = "k8s-pb-0.9.0";
const K8S_OPENAPI: &str = "k8s-openapi-0.29.0";
const OPENAPI_VERSION_DIR: &str = "v1_33";

struct Field {
    rust: String,
    tag: u32,
    /// `string`, `bool`, `int32`, `int64`, `double`, `bytes`, or `message`.
    ty: String,
    /// `optional`, `repeated` or `map`.
    label: &'static str,
    /// For `message` (and map values of message type): the resolved path.
    message: Option<String>,
}

struct Message {
    module: Vec<String>,
    name: String,
    fields: Vec<Field>,
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build_list_docs.rs");
    println!("cargo:rerun-if-changed=go_fields.tsv");
    println!("cargo:rerun-if-env-changed=KAPI_K8S_PB_SRC");
    println!("cargo:rerun-if-env-changed=KAPI_K8S_OPENAPI_SRC");
    let pb_src = locate("KAPI_K8S_PB_SRC", K8S_PB);
    let openapi_src = locate("KAPI_K8S_OPENAPI_SRC", K8S_OPENAPI);

    let mut messages = Vec::new();
    let mut groups: HashMap<Vec<String>, (String, String)> = HashMap::new();
    let mut list_rows = Vec::new();
    for file in rust_files(&pb_src) {
        let rel = file.strip_prefix(&pb_src).expect("under src");
        let module: Vec<String> = rel
            .parent()
            .map(|p| p.iter().map(|s| s.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        if module.is_empty() {
            continue; // lib.rs: traits only
        }
        let text = std::fs::read_to_string(&file).expect("read k8s-pb source");
        parse_module(&module, &text, &mut messages, &mut groups);
        list_docs::rows(&module, &text, &mut list_rows);
    }
    older_versions_of_known_groups(&messages, &mut groups);
    // Aggregated discovery's documents are top-level objects of a group that
    // has no resource, so nothing in k8s-pb names the group: say it here.
    for version in ["v2", "v2beta1"] {
        let module = vec!["api".into(), "apidiscovery".into(), version.to_string()];
        groups
            .entry(module)
            .or_insert_with(|| ("apidiscovery.k8s.io".into(), version.into()));
    }
    let names = json_names(&openapi_src.join(OPENAPI_VERSION_DIR));
    let go = go_facts(Path::new("go_fields.tsv"));
    let out = generate(&messages, &groups, &names, &go);
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("descriptors.rs");
    std::fs::write(dest, out).expect("write descriptors.rs");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    list_docs::write(&list_rows, &out_dir.join("list_docs.rs"));
}

/// A version module without `impl Resource` blocks (an older version
/// k8s.io/api keeps so that servers can read what was stored at it, e.g.
/// flowcontrol `v1beta3`, discovery `v1beta1`) belongs to the group of its
/// sibling version modules.
fn older_versions_of_known_groups(
    messages: &[Message],
    groups: &mut HashMap<Vec<String>, (String, String)>,
) {
    let mut found = Vec::new();
    for m in messages {
        let Some((version, parent)) = m.module.split_last() else {
            continue;
        };
        if groups.contains_key(&m.module) || m.module.first().map(String::as_str) != Some("api") {
            continue;
        }
        let sibling = groups
            .iter()
            .find(|(k, _)| k.len() == m.module.len() && k[..k.len() - 1] == *parent);
        if let Some((_, (group, _))) = sibling {
            found.push((m.module.clone(), (group.clone(), version.clone())));
        }
    }
    groups.extend(found);
}

/// The unpacked source (`src/`) of `crate_dir`, from an override variable or
/// cargo's registry cache.
fn locate(var: &str, crate_dir: &str) -> PathBuf {
    if let Ok(dir) = std::env::var(var) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("neither CARGO_HOME nor HOME is set");
    let registry = home.join("registry").join("src");
    let found = std::fs::read_dir(&registry).ok().and_then(|dirs| {
        dirs.flatten()
            .map(|d| d.path().join(crate_dir).join("src"))
            .find(|p| p.is_dir())
    });
    found.unwrap_or_else(|| {
        panic!(
            "kapi-protobuf: cannot find the source of {crate_dir} under {}; it is a dependency, \
             so `cargo fetch` unpacks it there. Set {var} to its src/ directory if cargo keeps \
             sources elsewhere (vendoring).",
            registry.display()
        )
    })
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir").flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn parse_module(
    module: &[String],
    text: &str,
    messages: &mut Vec<Message>,
    groups: &mut HashMap<Vec<String>, (String, String)>,
) {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(name) = line
            .strip_prefix("pub struct ")
            .and_then(|r| r.strip_suffix(" {}"))
        {
            messages.push(Message {
                module: module.to_vec(),
                name: name.to_string(),
                fields: Vec::new(),
            });
        } else if let Some(name) = line
            .strip_prefix("pub struct ")
            .and_then(|r| r.strip_suffix(" {"))
        {
            let mut body = String::new();
            i += 1;
            while i < lines.len() && lines[i] != "}" {
                body.push_str(lines[i]);
                body.push(' ');
                i += 1;
            }
            let fields = parse_fields(module, &body);
            messages.push(Message {
                module: module.to_vec(),
                name: name.to_string(),
                fields,
            });
        } else if line.starts_with("impl crate::Resource for ") {
            let mut group = None;
            let mut version = None;
            while i < lines.len() && lines[i] != "}" {
                let l = lines[i];
                if let Some(v) = const_str(l, "GROUP") {
                    group = Some(v);
                }
                if let Some(v) = const_str(l, "VERSION") {
                    version = Some(v);
                }
                i += 1;
            }
            if let (Some(g), Some(v)) = (group, version) {
                groups.insert(module.to_vec(), (g, v));
            }
        }
        i += 1;
    }
}

fn const_str(line: &str, name: &str) -> Option<String> {
    let rest = line.strip_prefix(&format!("const {name}: &'static str = \""))?;
    Some(rest.strip_suffix("\";")?.to_string())
}

fn parse_fields(module: &[String], body: &str) -> Vec<Field> {
    let mut fields = Vec::new();
    for chunk in body.split("#[prost(").skip(1) {
        let (attr, rest) = chunk.split_once(")]").expect("closed prost attribute");
        let decl = rest.trim();
        let decl = decl.strip_prefix("pub ").expect("pub field");
        let (rust, ty_text) = decl.split_once(':').expect("field type");
        let ty_text: String = ty_text
            .trim()
            .trim_end_matches(',')
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let parts: Vec<&str> = attr.split(',').map(str::trim).collect();
        let tag = attr
            .split("tag = \"")
            .nth(1)
            .and_then(|t| t.split('"').next())
            .and_then(|t| t.parse().ok())
            .expect("prost tag");
        let (ty, label, message) = if attr.starts_with("btree_map") {
            let value = attr
                .split('"')
                .nth(1)
                .and_then(|kv| kv.split(',').nth(1))
                .map(str::trim)
                .expect("map value type")
                .to_string();
            let msg = (value == "message").then(|| resolve(module, map_value_type(&ty_text)));
            (value, "map", msg)
        } else {
            let ty = parts[0].split_whitespace().next().unwrap_or("").to_string();
            let label = if parts.contains(&"repeated") {
                "repeated"
            } else {
                "optional"
            };
            let msg = (ty == "message").then(|| resolve(module, inner_type(&ty_text)));
            (ty, label, msg)
        };
        fields.push(Field {
            rust: rust.trim().trim_start_matches("r#").to_string(),
            tag,
            ty,
            label,
            message,
        });
    }
    fields
}

fn inner_type(ty: &str) -> &str {
    let mut t = ty;
    for wrapper in [
        "::core::option::Option<",
        "::prost::alloc::vec::Vec<",
        "::prost::alloc::boxed::Box<",
    ] {
        if let Some(rest) = t.strip_prefix(wrapper) {
            t = rest
                .strip_suffix('>')
                .expect("balanced generic")
                .trim_end_matches(',');
            return inner_type(t);
        }
    }
    t
}

fn map_value_type(ty: &str) -> &str {
    let args = ty
        .strip_prefix("::prost::alloc::collections::BTreeMap<")
        .and_then(|r| r.strip_suffix('>'))
        .expect("BTreeMap type");
    args.split_once(',')
        .expect("key, value")
        .1
        .trim_end_matches(',')
}

/// Resolve a Rust path relative to `module` into a dotted message path.
fn resolve(module: &[String], path: &str) -> String {
    let mut base: Vec<String> = module.to_vec();
    let mut segs: Vec<&str> = path.split("::").collect();
    if segs.first() == Some(&"crate") {
        base.clear();
        segs.remove(0);
    }
    while segs.first() == Some(&"super") {
        base.pop();
        segs.remove(0);
    }
    base.extend(segs.iter().map(|s| s.to_string()));
    base.join(".")
}

/// The serde field names of the k8s-openapi types: all of them by normalized
/// form, and per type (`api.core.v1.Volume`, the same path as in k8s-pb).
struct Names {
    all: HashMap<String, Vec<String>>,
    by_type: HashMap<String, Vec<String>>,
    /// Per type, the JSON names of fields k8s-openapi declares without `Option`:
    /// Go fields without `omitempty`, whose zero value is written out.
    required: HashMap<String, Vec<String>>,
}

fn json_names(dir: &Path) -> Names {
    let mut names: HashMap<String, Vec<String>> = HashMap::new();
    let mut by_type: HashMap<String, Vec<String>> = HashMap::new();
    let mut required: HashMap<String, Vec<String>> = HashMap::new();
    for file in rust_files(dir) {
        let text = std::fs::read_to_string(&file).expect("read k8s-openapi source");
        let rel = file.strip_prefix(dir).expect("under dir");
        let module: Vec<String> = rel
            .parent()
            .map(|p| p.iter().map(|s| s.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let ty = text.lines().find_map(|l| {
            l.strip_prefix("pub struct ").map(|r| {
                r.split(|c: char| !c.is_alphanumeric())
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
        });
        let mut type_names = Vec::new();
        // `pub value: i32,` in the struct: a scalar that is never absent.
        let plain: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("pub "))
            .filter_map(|l| l.split_once(": "))
            .filter(|(_, ty)| {
                matches!(
                    ty.trim_end_matches(','),
                    "i32" | "i64" | "f64" | "bool" | "std::string::String"
                )
            })
            .map(|(field, _)| field)
            .collect();
        let mut type_required = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            let Some(rest) = line.strip_prefix('"') else {
                continue;
            };
            let Some((name, tail)) = rest.split_once('"') else {
                continue;
            };
            if !tail.trim_start().starts_with("=> Field::Key_") {
                continue;
            }
            type_names.push(name.to_string());
            let rust = tail
                .trim_start()
                .trim_start_matches("=> Field::Key_")
                .trim_end_matches(',');
            if plain.contains(&rust) {
                type_required.push(name.to_string());
            }
            let list = names.entry(normalize(name)).or_default();
            if !list.iter().any(|n| n == name) {
                list.push(name.to_string());
            }
        }
        if let Some(ty) = ty {
            let key = format!("{}.{ty}", module.join(".")).to_ascii_lowercase();
            required.insert(key.clone(), type_required);
            by_type.insert(key, type_names);
        }
    }
    Names {
        all: names,
        by_type,
        required,
    }
}

fn normalize(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

fn lower_camel(snake: &str) -> String {
    let mut out = String::new();
    for (i, part) in snake.split('_').enumerate() {
        let mut cs = part.chars();
        match (i, cs.next()) {
            (0, Some(c)) => {
                out.push(c);
                out.extend(cs);
            }
            (_, Some(c)) => {
                out.extend(c.to_uppercase());
                out.extend(cs);
            }
            _ => {}
        }
    }
    out
}

/// The JSON name of a prost field of message `path`: the name of the same
/// k8s-openapi type that normalizes the same, else any k8s-openapi name that
/// does (preferring plain lowerCamelCase when several do), else lowerCamelCase.
/// `None` when the type is known and has no such field: an embedded
/// (`json:",inline"`) struct.
fn json_name(path: &str, rust: &str, names: &Names) -> Option<String> {
    let norm = normalize(rust);
    if let Some(own) = names.by_type.get(&path.to_ascii_lowercase()) {
        return own.iter().find(|n| normalize(n) == norm).cloned();
    }
    Some(global_json_name(rust, names))
}

fn global_json_name(rust: &str, names: &Names) -> String {
    let camel = lower_camel(rust);
    match names.all.get(&normalize(rust)) {
        Some(list) if list.contains(&camel) => camel,
        Some(list) if list.len() == 1 => list[0].clone(),
        _ => camel,
    }
}

/// Whether message field `f` of `path` is an embedded struct: most of the
/// nested message's fields are JSON fields of the parent type itself.
fn embedded(
    path: &str,
    f: &Field,
    messages: &[Message],
    index: &BTreeMap<String, usize>,
    names: &Names,
) -> bool {
    let (Some(own), Some(inner), "optional") = (
        names.by_type.get(&path.to_ascii_lowercase()),
        &f.message,
        f.label,
    ) else {
        return false;
    };
    let inner = &messages[index[inner]];
    let own: Vec<String> = own.iter().map(|n| normalize(n)).collect();
    let shared = inner
        .fields
        .iter()
        .filter(|g| own.contains(&normalize(&g.rust)))
        .count();
    !inner.fields.is_empty() && shared * 2 >= inner.fields.len()
}

/// What `go_fields.tsv` says of one Go struct: its pointer fields and its
/// fields without `omitempty`, by JSON name.
struct GoStruct {
    pointers: Vec<String>,
    always: Vec<String>,
}

/// `go_fields.tsv` (written by `scripts/go-field-facts`), keyed by the k8s-pb
/// message path: `k8s.io/api/apps/v1` + `StatefulSetSpec` is
/// `api.apps.v1.StatefulSetSpec`, `k8s.io/kube-aggregator/...` is
/// `kube_aggregator....`.
fn go_facts(path: &Path) -> HashMap<String, GoStruct> {
    let text = std::fs::read_to_string(path).expect("read go_fields.tsv");
    let list = |s: &str| -> Vec<String> {
        if s == "-" {
            Vec::new()
        } else {
            s.split(',').map(str::to_string).collect()
        }
    };
    let mut out = HashMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [package, name, pointers, always] = cols[..] else {
            panic!("go_fields.tsv: not four columns: {line}");
        };
        let module = package
            .trim_start_matches("k8s.io/")
            .replace('-', "_")
            .replace('/', ".");
        // By lower case: prost renames `HPAScalingRules` to `HpaScalingRules`.
        out.insert(
            format!("{module}.{name}").to_ascii_lowercase(),
            GoStruct {
                pointers: list(pointers),
                always: list(always),
            },
        );
    }
    out
}

fn generate(
    messages: &[Message],
    groups: &HashMap<Vec<String>, (String, String)>,
    names: &Names,
    go: &HashMap<String, GoStruct>,
) -> String {
    let index: BTreeMap<String, usize> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| (format!("{}.{}", m.module.join("."), m.name), i))
        .collect();
    let mut out =
        String::from("// @generated by kapi-protobuf/build.rs from the k8s-pb sources.\n");
    out.push_str("pub static MESSAGES: &[MessageDesc] = &[\n");
    for m in messages {
        let path = format!("{}.{}", m.module.join("."), m.name);
        let (group, version) = groups
            .get(&m.module)
            .cloned()
            .unwrap_or_else(|| (String::new(), m.module.last().cloned().unwrap_or_default()));
        let gv_known = groups.contains_key(&m.module);
        let facts = go.get(&path.to_ascii_lowercase());
        writeln!(
            out,
            "MessageDesc {{ path: {path:?}, group: {group:?}, version: {version:?}, kind: {:?}, resource_module: {gv_known}, go_facts: {}, fields: &[",
            m.name,
            facts.is_some()
        )
        .unwrap();
        for f in &m.fields {
            let ty = match (f.ty.as_str(), &f.message) {
                (_, Some(msg)) => {
                    let idx = index
                        .get(msg)
                        .unwrap_or_else(|| panic!("{path}.{}: unknown message {msg}", f.rust));
                    format!("Ty::Message({idx})")
                }
                ("string", None) => "Ty::String".into(),
                ("bool", None) => "Ty::Bool".into(),
                ("int32", None) => "Ty::Int32".into(),
                ("int64", None) => "Ty::Int64".into(),
                ("double", None) => "Ty::Double".into(),
                ("bytes", None) => "Ty::Bytes".into(),
                (other, None) => panic!("{path}.{}: unsupported prost type {other}", f.rust),
            };
            let label = match f.label {
                "repeated" => "Label::Repeated",
                "map" => "Label::Map",
                _ => "Label::Optional",
            };
            let (json, inline) = match json_name(&path, &f.rust, names) {
                Some(json) => (json, false),
                None if embedded(&path, f, messages, &index, names) => (lower_camel(&f.rust), true),
                // A field newer than the k8s-openapi version: by any type's names.
                None => (global_json_name(&f.rust, names), false),
            };
            let required = names
                .required
                .get(&path.to_ascii_lowercase())
                .is_some_and(|r| r.contains(&json));
            let pointer = facts.is_some_and(|g| g.pointers.contains(&json));
            // Without facts, k8s-openapi's `Option`s stand for `omitempty`.
            let omitempty = match facts {
                Some(g) => !g.always.contains(&json),
                None => !required,
            };
            writeln!(
                out,
                "  FieldDesc {{ json: {json:?}, tag: {}, ty: {ty}, label: {label}, inline: {inline}, pointer: {pointer}, omitempty: {omitempty} }},",
                f.tag
            )
            .unwrap();
        }
        out.push_str("] },\n");
    }
    out.push_str("];\n");
    out
}
