//! Unit tests of one prefix's cache.

use super::*;
use kapi_storage::KeyValue;

fn put(key: &str, revision: Revision) -> Event {
    Event {
        kind: EventKind::Put,
        kv: KeyValue {
            key: key.into(),
            value: bytes::Bytes::from_static(b"v"),
            create_revision: revision,
            mod_revision: revision,
            version: 1,
        },
        prev: None,
    }
}

/// The backend compacts at a revision the cache has not reached yet: the
/// events up to it are dropped when they arrive, and neither a read nor a
/// watch from before it is answered, before or after they arrive.
#[test]
fn a_compaction_ahead_of_the_cache_holds_when_its_events_arrive() {
    let window = Window {
        min_events: 100,
        fresh: Duration::from_secs(60),
        max_events: 100,
    };
    let cache = PrefixCache::new("/t/".into(), window);
    cache.reset(BTreeMap::new(), 2);
    cache.forget_before(4);
    assert_eq!(
        cache.watch("/t/", 2, 8).err(),
        Some(Miss::TooOld { oldest: 4 })
    );
    cache.apply(vec![put("/t/c", 3), put("/t/c", 4), put("/t/c", 5)], 5);
    assert_eq!(
        cache.watch("/t/", 2, 8).err(),
        Some(Miss::TooOld { oldest: 4 })
    );
    assert!(matches!(
        cache.get("/t/c", Some(3)),
        Err(Miss::TooOld { oldest: 4 })
    ));
    let (mut rx, after) = cache.watch("/t/", 4, 8).expect("after the compaction");
    assert_eq!(after, 4);
    match rx.try_recv() {
        Ok(CacheMessage::Events(evs)) => {
            let revs: Vec<_> = evs.iter().map(|e| e.revision()).collect();
            assert_eq!(revs, [5]);
        }
        _ => panic!("the event after the compaction"),
    }
}
