//! Whole lists kept while nothing changes (`cache/items.rs`): the next whole
//! list of the prefix shares the kept one, any change shows in the next list,
//! and a read at an older revision, a page or a filtered list never takes it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kapi_registry::cache::{CachedPage, Items, KeyFilter, ReadAt};

use crate::fixtures;

const N: usize = 300;

async fn whole(f: &fixtures::Fixture, at: ReadAt) -> CachedPage {
    f.cache
        .list_cached("/t/m/", at, 0, None)
        .await
        .unwrap()
        .expect("served from the cache")
}

fn shared(items: &Items) -> &Arc<[Arc<kapi_registry::cache::CachedObject>]> {
    match items {
        Items::Shared(s) => s,
        Items::Own(_) => panic!("not a kept list"),
    }
}

fn keys(items: &Items) -> Vec<String> {
    items.iter().map(|o| o.kv.key.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_list_is_kept_until_something_changes() {
    let f = fixtures::embedded().await;
    f.create_keys("/t/m/", N).await;
    let a = whole(&f, ReadAt::Consistent).await;
    let b = whole(&f, ReadAt::Any).await;
    assert_eq!(a.items.len(), N);
    assert!(Arc::ptr_eq(shared(&a.items), shared(&b.items)), "shared");
    assert_eq!((b.more, b.remaining), (false, 0));

    // A change: the next whole list has it, and the kept one is gone.
    f.backend.delete("/t/m/7", None).await.unwrap();
    let added = f
        .backend
        .create("/t/m/new", Bytes::from_static(b"n"))
        .await
        .unwrap();
    assert!(
        f.cache
            .wait_for(added.mod_revision, Duration::from_secs(10))
            .await
    );
    let c = whole(&f, ReadAt::Consistent).await;
    assert!(c.revision >= added.mod_revision);
    let now = keys(&c.items);
    assert!(now.contains(&"/t/m/new".to_owned()));
    assert!(!now.contains(&"/t/m/7".to_owned()), "deleted key listed");
    assert_eq!(now.len(), N);
    assert!(!Arc::ptr_eq(shared(&a.items), shared(&c.items)));

    // At the first page's revision the old objects are back (the change lies
    // after it): built from the history, never from the kept list.
    let old = whole(&f, ReadAt::Exact(a.revision)).await;
    assert!(!old.items.is_shared());
    assert_eq!(keys(&old.items), keys(&a.items));
    assert!(old.items.iter().any(|o| o.kv.key == "/t/m/7"));

    // A page and a filtered list take their own objects.
    let page = f
        .cache
        .list_cached("/t/m/", ReadAt::Consistent, 10, None)
        .await
        .unwrap()
        .unwrap();
    assert!(!page.items.is_shared());
    assert_eq!((page.items.len(), page.more), (10, true));
    let one = f
        .cache
        .list_filtered(
            "/t/m/",
            ReadAt::Consistent,
            0,
            None,
            &KeyFilter::Key("/t/m/new".into()),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(keys(&one.items), vec!["/t/m/new".to_owned()]);

    // Filtering a kept list references only what passes, and leaves the kept
    // list as it was for the next reader.
    let mut some = whole(&f, ReadAt::Any).await.items;
    assert!(some.is_shared());
    some.retain(|o| o.kv.key.ends_with('5'));
    assert!(!some.is_shared());
    assert_eq!(some.len(), 30);
    assert!(some.iter().all(|o| o.kv.key.ends_with('5')));
    assert_eq!(whole(&f, ReadAt::Any).await.items.len(), N);
}

/// A page of `/t/m/` from the cache: `limit` keys from `start` on, read at `at`.
async fn page(f: &fixtures::Fixture, at: ReadAt, limit: usize, start: Option<&str>) -> CachedPage {
    f.cache
        .list_cached("/t/m/", at, limit, start)
        .await
        .unwrap()
        .expect("served from the cache")
}

/// Every page of `/t/m/` at one revision, `limit` at a time: (keys, remaining) per page.
async fn pages(f: &fixtures::Fixture, limit: usize) -> Vec<(Vec<String>, i64)> {
    let first = page(f, ReadAt::Consistent, limit, None).await;
    let at = first.revision;
    let mut out = Vec::new();
    let mut next = first;
    loop {
        let ks = keys(&next.items);
        out.push((ks.clone(), next.remaining));
        if !next.more {
            return out;
        }
        let start = format!("{}\0", ks.last().unwrap());
        next = page(f, ReadAt::Exact(at), limit, Some(&start)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_count_what_follows_them_from_the_kept_list() {
    let f = fixtures::embedded().await;
    f.create_keys("/t/m/", N).await;
    let all = pages(&f, 7).await;
    // The first page kept the whole list for the pages after it.
    assert!(whole(&f, ReadAt::Any).await.items.is_shared());
    let listed: Vec<String> = all.iter().flat_map(|(k, _)| k.clone()).collect();
    assert_eq!(listed.len(), N);
    let mut seen = 0;
    for (ks, remaining) in &all {
        seen += ks.len();
        assert_eq!(*remaining as usize, N - seen, "after {seen} keys");
    }

    // With a change ahead of a page (the kept list dropped), a page at the old
    // revision still counts what followed it then.
    let first = page(&f, ReadAt::Consistent, 10, None).await;
    let deleted = f.backend.delete(&listed[N - 1], None).await.unwrap();
    assert!(
        f.cache
            .wait_for(deleted.revision, Duration::from_secs(10))
            .await
    );
    let start = format!("{}\0", listed[9]);
    let second = page(&f, ReadAt::Exact(first.revision), 10, Some(&start)).await;
    assert_eq!(second.remaining as usize, N - 20);
    // At the new revision one key fewer follows.
    let now = page(&f, ReadAt::Exact(deleted.revision), 10, Some(&start)).await;
    assert_eq!(now.remaining as usize, N - 21);
}
