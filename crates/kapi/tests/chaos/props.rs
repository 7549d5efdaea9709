//! The fuzz entry points (`fuzz/src/entry.rs`, the same file the cargo-fuzz
//! targets call) run on stable Rust with seeded random input, a bounded number
//! of iterations per target: raw bytes, structured inputs from small grammars
//! (JSON objects over Kubernetes-ish keys and patch directives, selectors from
//! their tokens, write-ahead logs of valid frames), and those inputs mutated.
//! Iterations: 1,500 per target (WAL: 150), 20× with `KAPI_LONG_TESTS=1`.
//! Any crash found is kept below as a regression input.

#[path = "../../../../fuzz/src/entry.rs"]
mod entry;

use serde_json::{json, Map, Value};

use crate::util::{long, Rng};

const KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "labels",
    "annotations",
    "finalizers",
    "spec",
    "containers",
    "image",
    "ports",
    "containerPort",
    "protocol",
    "env",
    "value",
    "volumes",
    "data",
    "status",
    "conditions",
    "type",
    "replicas",
    "selector",
    "matchLabels",
    "template",
    "ownerReferences",
    "uid",
    "$patch",
    "$retainKeys",
    "$setElementOrder/containers",
    "$deleteFromPrimitiveList/finalizers",
    "$setElementOrder/ports",
    "tolerations",
    "key",
    "operator",
    "",
    "a/b",
    "~1",
];
const LITERALS: &[&str] = &[
    "replace", "delete", "merge", "a", "", "TCP", "x/y", "0", "-", "/", "~",
];

fn value(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth > 4 { 4 } else { 7 }) {
        0 => Value::Null,
        1 => json!(rng.below(3) == 0),
        2 => json!(rng.below(100_000) as i64 - 50_000),
        3 => json!(LITERALS[rng.below(LITERALS.len() as u64) as usize]),
        4 | 5 => {
            let mut m = Map::new();
            for _ in 0..rng.below(5) {
                let k = KEYS[rng.below(KEYS.len() as u64) as usize];
                m.insert(k.into(), value(rng, depth + 1));
            }
            Value::Object(m)
        }
        _ => Value::Array((0..rng.below(4)).map(|_| value(rng, depth + 1)).collect()),
    }
}

fn json_patch_ops(rng: &mut Rng) -> Value {
    let ops = ["add", "remove", "replace", "move", "copy", "test", "frob"];
    let paths = [
        "",
        "/",
        "/metadata",
        "/metadata/labels/a",
        "/spec/containers/0",
        "/spec/containers/-",
        "/data/~1x",
        "/a/b/c",
        "/spec/containers/99999999999999999999",
    ];
    let n = rng.below(4);
    Value::Array(
        (0..n)
            .map(|_| {
                json!({
                    "op": ops[rng.below(ops.len() as u64) as usize],
                    "path": paths[rng.below(paths.len() as u64) as usize],
                    "from": paths[rng.below(paths.len() as u64) as usize],
                    "value": value(rng, 3),
                })
            })
            .collect(),
    )
}

fn selector(rng: &mut Rng) -> String {
    let tokens = [
        "a",
        "b.c/d",
        "x",
        "=",
        "==",
        "!=",
        " in ",
        " notin ",
        "(",
        ")",
        ",",
        "!",
        " ",
        "\\",
        "\\,",
        "metadata.name",
        "spec.nodeName",
        "-",
        "a=b",
        "a in (b,c)",
        "é",
        "\u{0}",
    ];
    (0..rng.below(8))
        .map(|_| tokens[rng.below(tokens.len() as u64) as usize])
        .collect()
}

fn frame(out: &mut Vec<u8>, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

fn wal(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rev = 0i64;
    for _ in 0..rng.below(6) {
        // Revisions mostly in order; sometimes repeated, skipped or backwards.
        rev += rng.below(3) as i64 - (rng.below(8) == 0) as i64;
        let key = format!("/configmaps/ns/k{}", rng.below(3));
        let mut p = Vec::new();
        match rng.below(4) {
            0 => {
                p.push(2);
                p.extend_from_slice(&rev.to_le_bytes());
                p.extend_from_slice(&(key.len() as u32).to_le_bytes());
                p.extend_from_slice(key.as_bytes());
            }
            1 => {
                p.push(rng.below(256) as u8);
                p.extend((0..rng.below(40)).map(|_| rng.below(256) as u8));
            }
            _ => {
                p.push(1);
                for n in [rev, rev - rng.below(2) as i64, 1 + rng.below(3) as i64] {
                    p.extend_from_slice(&n.to_le_bytes());
                }
                p.extend_from_slice(&(key.len() as u32).to_le_bytes());
                p.extend_from_slice(key.as_bytes());
                let v = b"{\"v\":1}";
                p.extend_from_slice(&(v.len() as u32).to_le_bytes());
                p.extend_from_slice(v);
            }
        }
        frame(&mut out, &p);
    }
    out
}

fn raw(rng: &mut Rng) -> Vec<u8> {
    (0..rng.below(200)).map(|_| rng.below(256) as u8).collect()
}

/// Flip, insert, delete or truncate a few bytes.
fn mutate(rng: &mut Rng, mut b: Vec<u8>) -> Vec<u8> {
    for _ in 0..1 + rng.below(3) {
        let at = if b.is_empty() {
            0
        } else {
            rng.below(b.len() as u64) as usize
        };
        match rng.below(4) {
            0 if !b.is_empty() => b[at] ^= 1 << rng.below(8),
            1 => b.insert(at, rng.below(256) as u8),
            2 if !b.is_empty() => {
                b.remove(at);
            }
            _ => b.truncate(at),
        }
    }
    b
}

fn pair(a: &Value, b: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(a).unwrap();
    out.push(b'\n');
    out.extend(serde_json::to_vec(b).unwrap());
    out
}

/// Run `target` on `n` inputs from `gen`, half of them mutated.
fn run(
    name: &str,
    n: usize,
    seed: u64,
    gen: impl Fn(&mut Rng) -> Vec<u8>,
    target: fn(&[u8]),
) -> usize {
    let mut rng = Rng::new(seed);
    for i in 0..n {
        let input = match i % 4 {
            0 => raw(&mut rng),
            1 | 2 => gen(&mut rng),
            _ => {
                let g = gen(&mut rng);
                mutate(&mut rng, g)
            }
        };
        let caught = std::panic::catch_unwind(|| target(&input));
        assert!(
            caught.is_ok(),
            "{name}: input {i} (seed {seed}) broke a property: {:?}",
            String::from_utf8_lossy(&input)
        );
    }
    n
}

#[test]
fn fuzz_entry_points_on_seeded_random_input() {
    let scale = if long() { 20 } else { 1 };
    let n = 1500 * scale;
    let mut total = 0;
    total += run(
        "request_decoder",
        n,
        1,
        |r| {
            let mut b = vec![r.below(5) as u8];
            let v = value(r, 0);
            b.extend(if r.below(2) == 0 {
                serde_json::to_vec(&v).unwrap()
            } else {
                serde_saphyr_like(&v)
            });
            b
        },
        entry::request_decoder,
    );
    total += run(
        "json_patch",
        n,
        2,
        |r| pair(&value(r, 0), &json_patch_ops(r)),
        entry::json_patch,
    );
    total += run(
        "merge_patch",
        n,
        3,
        |r| pair(&value(r, 0), &value(r, 0)),
        entry::merge_patch,
    );
    total += run(
        "strategic_merge_patch",
        n,
        4,
        |r| {
            let mut b = vec![r.below(5) as u8];
            b.extend(pair(&value(r, 0), &value(r, 0)));
            b
        },
        entry::strategic_merge_patch,
    );
    total += run(
        "label_selector",
        n,
        5,
        |r| selector(r).into_bytes(),
        entry::label_selector,
    );
    total += run(
        "field_selector",
        n,
        6,
        |r| selector(r).into_bytes(),
        entry::field_selector,
    );
    total += run("wal_recovery", 150 * scale, 7, wal, entry::wal_recovery);
    eprintln!("props: {total} inputs through 7 fuzz entry points, no property broken");
}

/// A YAML-ish rendering (flow style is YAML too), with anchors sometimes.
fn serde_saphyr_like(v: &Value) -> Vec<u8> {
    let text = serde_json::to_string(v).unwrap();
    format!("x: &a {text}\ny: *a\nz: {text}\n").into_bytes()
}

/// Inputs that once broke a property, kept as regressions.
#[test]
fn fuzz_regressions() {
    for (target, input) in REGRESSIONS {
        target(input);
    }
}

type Target = fn(&[u8]);

const REGRESSIONS: &[(Target, &[u8])] = &[
    // The label selector lexer sliced inside a multi-byte character after `!`.
    (entry::label_selector, "!\u{e9}".as_bytes()),
    (entry::label_selector, "a=\u{20ac}".as_bytes()),
];
