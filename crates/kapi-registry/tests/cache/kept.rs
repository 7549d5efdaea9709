//! Whole lists kept for in-process readers (`Store::list_kept`): shared while
//! nothing under the resource changes, and never older than a consistent list
//! — also after writes the cache learns of only through its watch (another
//! server on the same storage).

use std::sync::Arc;

use kapi_registry::store::options::{ListOptions, WriteOptions};
use kapi_registry::store::KeptList;
use kapi_registry::Store;
use serde_json::{json, Value};

use crate::fixtures::{self, Fixture};
use crate::store::def;

fn names(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect()
}

async fn create(s: &Store, ns: &str, name: &str) {
    let obj = json!({"metadata": {"name": name, "namespace": ns}, "data": {"k": "v"}});
    s.create(obj, &WriteOptions::default()).await.unwrap();
}

async fn kept_lists_follow_every_write(f: Fixture) {
    let below = f.cache.backend().clone();
    let cached = Store::new(def(), below.clone()).with_cache(f.cache.clone());
    // Writes straight to storage: the cache sees them only through its watch.
    let other = Store::new(def(), below);
    let kept = KeptList::default();

    let first = cached.list_kept(Some("a"), &kept).await.unwrap();
    assert!(first.is_empty());
    let again = cached.list_kept(Some("a"), &kept).await.unwrap();
    assert!(
        Arc::ptr_eq(&first, &again),
        "nothing changed: the same list"
    );

    for (i, store) in [&cached, &other, &cached, &other].into_iter().enumerate() {
        let name = format!("cm{i}");
        create(store, "a", &name).await;
        let items = cached.list_kept(Some("a"), &kept).await.unwrap();
        let listed = cached
            .list(Some("a"), &ListOptions::default())
            .await
            .unwrap();
        assert_eq!(names(&items), names(&listed.items), "after {name}");
        assert!(names(&items).contains(&name.as_str()), "{name} at once");
    }

    // Other namespaces are kept apart; a write in one leaves the other's answer right.
    create(&other, "b", "only-b").await;
    let a = cached.list_kept(Some("a"), &kept).await.unwrap();
    let b = cached.list_kept(Some("b"), &kept).await.unwrap();
    assert_eq!(names(&a), ["cm0", "cm1", "cm2", "cm3"]);
    assert_eq!(names(&b), ["only-b"]);
    let all = cached.list_kept(None, &kept).await.unwrap();
    assert_eq!(all.len(), 5);

    other
        .delete(Some("a"), "cm1", &Default::default())
        .await
        .unwrap();
    let a = cached.list_kept(Some("a"), &kept).await.unwrap();
    assert_eq!(names(&a), ["cm0", "cm2", "cm3"]);
    let unchanged = cached.list_kept(Some("a"), &kept).await.unwrap();
    assert!(Arc::ptr_eq(&a, &unchanged));

    // A store without a cache lists every time, with the same answer.
    let plain = Store::new(def(), f.cache.backend().clone());
    let p = plain.list_kept(Some("a"), &kept).await.unwrap();
    assert_eq!(names(&p), ["cm0", "cm2", "cm3"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_lists_follow_every_write_on_the_embedded_store() {
    kept_lists_follow_every_write(fixtures::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_lists_follow_every_write_on_etcd() {
    kept_lists_follow_every_write(fixtures::etcd().await).await;
}
