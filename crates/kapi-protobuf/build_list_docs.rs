//! Part of the build script: the documentation upstream's OpenAPI gives the
//! list kinds (`PodList`: "PodList is a list of Pods.", its `items` and
//! `metadata`), read from the doc comments `k8s-pb` carries over from the
//! same Go comments upstream's OpenAPI is generated from, joined as
//! upstream's generator joins them (lines with a space, paragraphs with a
//! blank line, `+marker` lines dropped). Written to `$OUT_DIR/list_docs.rs`
//! as `(definition, kind doc, metadata doc, items doc)` rows; nothing of the
//! source is kept in the project.

use std::fmt::Write as _;
use std::path::Path;

/// The OpenAPI definition prefix of a k8s-pb module path.
fn def_prefix(module: &[String]) -> Option<String> {
    let head = match module.first()?.as_str() {
        "api" => "io.k8s.api".to_owned(),
        "apimachinery" => "io.k8s.apimachinery".to_owned(),
        "apiextensions_apiserver" => "io.k8s.apiextensions-apiserver".to_owned(),
        "kube_aggregator" => "io.k8s.kube-aggregator".to_owned(),
        _ => return None,
    };
    Some(
        std::iter::once(head)
            .chain(module[1..].iter().cloned())
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// Doc comment lines (without `///`) as upstream's OpenAPI description.
fn join_doc(lines: &[String]) -> String {
    let mut paragraphs: Vec<Vec<String>> = vec![Vec::new()];
    for l in lines {
        let l = l.trim();
        if l.is_empty() {
            paragraphs.push(Vec::new());
        } else if !l.starts_with('+') {
            let unlinked = l.replace(['<', '>'], "");
            paragraphs.last_mut().expect("one").push(unlinked);
        }
    }
    let texts: Vec<String> = paragraphs
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(|p| p.join(" "))
        .collect();
    texts.join("\n\n")
}

/// The rows of every `…List` message of `text` (module `module`).
pub fn rows(module: &[String], text: &str, out: &mut Vec<[String; 4]>) {
    let Some(prefix) = def_prefix(module) else {
        return;
    };
    let mut doc: Vec<String> = Vec::new();
    let mut current: Option<(String, String, String, String)> = None;
    for line in text.lines().map(str::trim) {
        if let Some(d) = line.strip_prefix("///") {
            doc.push(d.strip_prefix(' ').unwrap_or(d).to_owned());
            continue;
        }
        if line.starts_with("#[") {
            continue;
        }
        if let Some(name) = line
            .strip_prefix("pub struct ")
            .and_then(|r| r.strip_suffix(" {"))
        {
            current = name.ends_with("List").then(|| {
                (
                    format!("{prefix}.{name}"),
                    join_doc(&doc),
                    String::new(),
                    String::new(),
                )
            });
        } else if let Some(c) = current.as_mut() {
            if line.starts_with("pub metadata:") {
                c.2 = join_doc(&doc);
            } else if line.starts_with("pub items:") {
                c.3 = join_doc(&doc);
            } else if line == "}" {
                let (name, kind, meta, items) = current.take().expect("some");
                out.push([name, kind, meta, items]);
            }
        }
        doc.clear();
    }
}

/// Write the table of `rows` to `dest`.
pub fn write(rows: &[[String; 4]], dest: &Path) {
    let mut s =
        String::from("/// (definition, kind doc, metadata doc, items doc) of every list kind.\n");
    s.push_str("pub static LIST_DOCS: &[(&str, &str, &str, &str)] = &[\n");
    for r in rows {
        writeln!(s, "    ({:?}, {:?}, {:?}, {:?}),", r[0], r[1], r[2], r[3]).expect("write");
    }
    s.push_str("];\n");
    std::fs::write(dest, s).expect("write list_docs.rs");
}
