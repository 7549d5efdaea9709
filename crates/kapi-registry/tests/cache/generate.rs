//! Creates with a generated name (`metadata.generateName`), tried up to eight
//! times as upstream: a name the backend can tell is taken is passed over
//! before anything is prepared, a claimed free name is written without a
//! copy of the input, and where the backend cannot tell, the write finds a
//! taken name out and the next try has the input as it came.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use kapi_registry::store::options::WriteOptions;
use kapi_registry::Store;
use kapi_storage::{
    Backend, Claim, Claims, Deleted, KeyValue, ListOptions, ListPage, Result, Revision,
    StorageError, WatchStream,
};
use serde_json::json;

use crate::fixtures;
use crate::store::def;

/// What the test backend answers to a claim.
#[derive(Clone, Copy)]
enum Answer {
    Taken,
    Free,
    Unknown,
}

/// The embedded store with scripted claims (then its own) and the first
/// creates refused as if their key existed.
struct Scripted {
    inner: Arc<dyn Backend>,
    answers: Mutex<VecDeque<Answer>>,
    claims: Arc<Claims>,
    refuse_creates: Mutex<usize>,
    claimed: Mutex<Vec<String>>,
    written: Mutex<Vec<String>>,
}

impl Scripted {
    fn new(inner: Arc<dyn Backend>, answers: &[Answer], refuse_creates: usize) -> Arc<Self> {
        Arc::new(Scripted {
            inner,
            answers: Mutex::new(answers.iter().copied().collect()),
            claims: Arc::default(),
            refuse_creates: Mutex::new(refuse_creates),
            claimed: Mutex::default(),
            written: Mutex::default(),
        })
    }

    fn claimed(&self) -> Vec<String> {
        self.claimed.lock().unwrap().clone()
    }

    fn written(&self) -> Vec<String> {
        self.written.lock().unwrap().clone()
    }
}

#[async_trait]
impl Backend for Scripted {
    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<Option<KeyValue>> {
        self.inner.get(key, revision).await
    }
    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListPage> {
        self.inner.list(prefix, opts).await
    }
    async fn count(&self, prefix: &str) -> Result<i64> {
        self.inner.count(prefix).await
    }
    async fn create_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        self.written.lock().unwrap().push(key.to_owned());
        {
            let mut refuse = self.refuse_creates.lock().unwrap();
            if *refuse > 0 {
                *refuse -= 1;
                return Err(StorageError::AlreadyExists {
                    key: key.to_owned(),
                });
            }
        }
        self.inner.create_with_ttl(key, value, ttl).await
    }
    async fn update_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        self.inner.update_with_ttl(key, value, expected, ttl).await
    }
    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted> {
        self.inner.delete(key, expected).await
    }
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        self.inner.watch(prefix, after).await
    }
    async fn compact(&self, revision: Revision) -> Result<()> {
        self.inner.compact(revision).await
    }
    async fn current_revision(&self) -> Result<Revision> {
        self.inner.current_revision().await
    }
    fn claim(&self, key: &str) -> Claim {
        self.claimed.lock().unwrap().push(key.to_owned());
        let answer = self.answers.lock().unwrap().pop_front();
        match answer {
            Some(Answer::Taken) => Claim::Taken,
            Some(Answer::Free) => self.claims.claim(key, || false),
            Some(Answer::Unknown) => Claim::Unknown,
            None => self.inner.claim(key),
        }
    }
    async fn health(&self) -> Result<()> {
        self.inner.health().await
    }
    fn name(&self) -> &'static str {
        "scripted"
    }
}

async fn create(backend: Arc<Scripted>) -> std::result::Result<serde_json::Value, String> {
    let store = Store::new(def(), backend);
    let obj = json!({"metadata": {"generateName": "gen-", "namespace": "ns"}, "data": {"k": "v"}});
    store
        .create(obj, &WriteOptions::default())
        .await
        .map_err(|e| format!("{} {:?} {}", e.code, e.details, e.message))
}

/// The created object is the input under the name of `key`, the last one tried.
fn created_as(obj: &serde_json::Value, key: &str) {
    let name = obj["metadata"]["name"].as_str().unwrap();
    assert_eq!(key, format!("/t/configmaps/ns/{name}"));
    assert_eq!(obj["metadata"]["generateName"], "gen-");
    assert_eq!(obj["data"]["k"], "v");
}

/// Upstream's answer once no generated name could be written.
fn is_conflict(err: &str) {
    assert!(err.starts_with("409 "), "{err}");
    assert!(err.contains("retry_after_seconds: Some(1)"), "{err}");
    let text = "the server was not able to generate a unique name";
    assert!(err.contains(text), "{err}");
}

fn distinct(keys: &[String]) -> bool {
    let mut k = keys.to_vec();
    k.sort();
    k.dedup();
    k.len() == keys.len() && keys.iter().all(|k| k.starts_with("/t/configmaps/ns/gen-"))
}

#[tokio::test]
async fn taken_names_are_passed_over_before_anything_is_written() {
    let f = fixtures::embedded().await;
    // Seven names taken; the eighth is the store's to claim (free).
    let b = Scripted::new(f.cache.backend().clone(), &[Answer::Taken; 7], 0);
    let obj = create(b.clone()).await.unwrap();
    let claimed = b.claimed();
    assert_eq!(claimed.len(), 8);
    assert!(distinct(&claimed), "{claimed:?}");
    assert_eq!(
        b.written(),
        [claimed[7].clone()],
        "only the free name is written"
    );
    created_as(&obj, &claimed[7]);
    // The claim ended with the write: the name is taken by the object now.
    assert!(matches!(f.cache.backend().claim(&claimed[7]), Claim::Taken));
}

#[tokio::test]
async fn eight_taken_names_are_a_generate_name_conflict() {
    let f = fixtures::embedded().await;
    let b = Scripted::new(f.cache.backend().clone(), &[Answer::Taken; 8], 0);
    is_conflict(&create(b.clone()).await.unwrap_err());
    assert_eq!(b.claimed().len(), 8);
    assert!(b.written().is_empty());
}

#[tokio::test]
async fn a_claimed_name_taken_by_a_named_create_ends_the_tries() {
    let f = fixtures::embedded().await;
    let b = Scripted::new(f.cache.backend().clone(), &[Answer::Free], 1);
    is_conflict(&create(b.clone()).await.unwrap_err());
    assert_eq!(b.claimed().len(), 1);
    assert_eq!(b.written(), b.claimed());
}

#[tokio::test]
async fn where_claims_cannot_tell_the_write_finds_taken_names() {
    let f = fixtures::embedded().await;
    // Three names found taken by their write, the fourth written: each try
    // started from the input as it came.
    let b = Scripted::new(f.cache.backend().clone(), &[Answer::Unknown; 8], 3);
    let obj = create(b.clone()).await.unwrap();
    let written = b.written();
    assert_eq!(written.len(), 4);
    assert!(distinct(&written), "{written:?}");
    created_as(&obj, &written[3]);
    // Eight found taken: the conflict.
    let b = Scripted::new(f.cache.backend().clone(), &[Answer::Unknown; 8], 8);
    is_conflict(&create(b.clone()).await.unwrap_err());
    assert_eq!(b.written().len(), 8);
}
