//! A work queue as client-go's: a key added while queued is queued once; a key
//! added while a worker holds it is queued again when the worker is done, so no
//! two workers ever hold the same key and no change is lost.

use std::collections::{HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

struct State<K> {
    queue: VecDeque<K>,
    queued: HashSet<K>,
    processing: HashSet<K>,
    /// Added while processing: queue again on `done`.
    dirty: HashSet<K>,
}

impl<K: Clone + Eq + Hash> State<K> {
    fn add(&mut self, key: K) -> bool {
        if self.processing.contains(&key) {
            self.dirty.insert(key);
            return false;
        }
        if self.queued.insert(key.clone()) {
            self.queue.push_back(key);
            return true;
        }
        false
    }
}

pub struct WorkQueue<K> {
    state: Mutex<State<K>>,
    ready: Notify,
}

impl<K: Clone + Eq + Hash + Send + 'static> WorkQueue<K> {
    pub fn new() -> Arc<Self> {
        Arc::new(WorkQueue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                queued: HashSet::new(),
                processing: HashSet::new(),
                dirty: HashSet::new(),
            }),
            ready: Notify::new(),
        })
    }

    pub fn add(&self, key: K) {
        if self.state.lock().expect("queue lock").add(key) {
            self.ready.notify_one();
        }
    }

    /// Add `key` after `delay` (a retry).
    pub fn add_after(self: &Arc<Self>, key: K, delay: Duration) {
        let me = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            me.add(key);
        });
    }

    /// The next key; the caller must call [`WorkQueue::done`] with it.
    pub async fn get(&self) -> K {
        loop {
            let notified = self.ready.notified();
            {
                let mut st = self.state.lock().expect("queue lock");
                if let Some(key) = st.queue.pop_front() {
                    st.queued.remove(&key);
                    st.processing.insert(key.clone());
                    if !st.queue.is_empty() {
                        self.ready.notify_one();
                    }
                    return key;
                }
            }
            notified.await;
        }
    }

    pub fn done(&self, key: &K) {
        let requeue = {
            let mut st = self.state.lock().expect("queue lock");
            st.processing.remove(key);
            st.dirty.remove(key) && st.add(key.clone())
        };
        if requeue {
            self.ready.notify_one();
        }
    }
}

/// Run `workers` tasks taking keys from `queue` and handing them to `work`; a
/// failed key is retried after a growing delay (10 ms doubling to 5 s).
pub fn run_workers<K, F, Fut>(queue: Arc<WorkQueue<K>>, workers: usize, work: F)
where
    K: Clone + Eq + Hash + Send + Sync + std::fmt::Debug + 'static,
    F: Fn(K) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send,
{
    let failures: Arc<Mutex<std::collections::HashMap<K, u32>>> = Arc::default();
    for _ in 0..workers {
        let (queue, work, failures) = (queue.clone(), work.clone(), failures.clone());
        tokio::spawn(async move {
            loop {
                let key = queue.get().await;
                let result = work(key.clone()).await;
                queue.done(&key);
                let mut f = failures.lock().expect("failures lock");
                match result {
                    Ok(()) => {
                        f.remove(&key);
                    }
                    Err(e) => {
                        let n = f.entry(key.clone()).or_insert(0);
                        *n = (*n + 1).min(10);
                        let delay = Duration::from_millis(10 << *n).min(Duration::from_secs(5));
                        tracing::debug!(?key, error = %e, "controller retries");
                        queue.add_after(key, delay);
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keys_are_deduplicated_and_requeued_when_dirty() {
        let q = WorkQueue::new();
        q.add("a");
        q.add("a");
        q.add("b");
        let first = q.get().await;
        assert_eq!(first, "a");
        q.add("a"); // while processing: queued again on done
        assert_eq!(q.get().await, "b");
        q.done(&"b");
        q.done(&"a");
        assert_eq!(q.get().await, "a");
        q.done(&"a");
        assert!(q.state.lock().unwrap().queue.is_empty());
    }
}
