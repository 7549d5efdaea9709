//! One priority level's seats and queues: shuffle sharding and fair queuing, as
//! upstream's `util/flowcontrol/fairqueuing/queueset`, with each request
//! taking the seats its work estimate asks for (`mod.rs`: big LISTs, writes
//! with many watchers) and unit execution time.
//!
//! A request's flow (schema + distinguisher) hashes to a hand of `hand_size`
//! queues out of `queues` (shuffle sharding), and joins the shortest of them.
//! Fair queuing: each queue has a virtual start time; a queue becoming busy
//! starts at the level's current virtual time, every dispatch from a queue
//! advances its virtual time by the request's seats, and free seats go to the
//! non-empty queue with the smallest virtual time when its head request fits
//! (or when nothing executes: a request wider than the limit still runs alone). So a flow that keeps its queue full
//! gets one turn per round like any other, and a quiet flow is served next.
//!
//! Invariants (under the one lock): `executing <= limit` except for a limit
//! lowered while requests run; a waiter is in exactly one queue until it is
//! dispatched, rejected or gives up; a request that executes at once is still
//! charged to its queue, so flows that never wait are accounted too;
//! `waiting_seats` is the sum of the waiters' seats, and the seat demand
//! integrator (`borrow.rs`) follows `executing + waiting_seats` after every
//! change. The limit is the level's current limit, which seat borrowing
//! (`mod.rs`) moves between its lower and upper limits.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::borrow::{DemandStats, Integrator};
use super::config::LevelKind;

/// Why a request was not admitted (upstream's `reason` label values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    QueueFull,
    ConcurrencyLimit,
    TimeOut,
}

impl Rejection {
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::QueueFull => "queue-full",
            Rejection::ConcurrencyLimit => "concurrency-limit",
            Rejection::TimeOut => "time-out",
        }
    }
}

struct Waiter {
    id: u64,
    seats: usize,
    tx: oneshot::Sender<()>,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Waiter>,
    executing: usize,
    virtual_start: u64,
}

struct State {
    kind: LevelKind,
    limit: usize,
    executing: usize,
    queues: Vec<Queue>,
    virtual_time: u64,
    next_id: u64,
    waiting_seats: usize,
    demand: Integrator,
    stats: DemandStats,
}

/// A priority level's admission state. Cheap to share (`Arc`).
pub struct Level {
    state: Mutex<State>,
}

/// A held seat; dropping it frees the seat and dispatches the next waiter.
pub struct Seat {
    level: Arc<Level>,
    queue: Option<usize>,
    seats: usize,
}

impl Seat {
    /// How many seats are held.
    pub fn seats(&self) -> usize {
        self.seats
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut st = self.level.state.lock().expect("level lock");
        st.executing = st.executing.saturating_sub(self.seats);
        if let Some(q) = self.queue.and_then(|q| st.queues.get_mut(q)) {
            q.executing = q.executing.saturating_sub(self.seats);
        }
        st.dispatch();
    }
}

/// How long a request waited and whether it got a seat.
pub struct Admission {
    pub result: Result<Seat, Rejection>,
    pub waited: std::time::Duration,
    /// Whether it waited in a queue at all.
    pub queued: bool,
}

impl State {
    /// Whether `seats` more fit under the limit (always when idle).
    fn fits(&self, seats: usize) -> bool {
        self.executing == 0 || self.executing + seats <= self.limit
    }

    /// Follow the seat demand (after every change of the counts).
    fn note_demand(&mut self) {
        let demand = (self.executing + self.waiting_seats) as f64;
        self.demand.set(demand);
    }

    /// Take waiter `id` out of queue `qi`; whether it was there.
    fn remove_waiter(&mut self, qi: usize, id: u64) -> bool {
        let Some(q) = self.queues.get_mut(qi) else {
            return false;
        };
        let Some(pos) = q.waiting.iter().position(|w| w.id == id) else {
            return false;
        };
        let w = q.waiting.remove(pos).expect("position in queue");
        self.waiting_seats = self.waiting_seats.saturating_sub(w.seats);
        self.note_demand();
        true
    }

    fn dispatch(&mut self) {
        self.dispatch_waiters();
        self.note_demand();
    }

    fn dispatch_waiters(&mut self) {
        while self.executing < self.limit {
            let Some(qi) = self
                .queues
                .iter()
                .enumerate()
                .filter(|(_, q)| !q.waiting.is_empty())
                .min_by_key(|(i, q)| (q.virtual_start, *i))
                .map(|(i, _)| i)
            else {
                return;
            };
            let seats = self.queues[qi].waiting.front().map_or(1, |w| w.seats);
            if !self.fits(seats) {
                return;
            }
            let q = &mut self.queues[qi];
            let w = q.waiting.pop_front().expect("non-empty queue");
            self.waiting_seats = self.waiting_seats.saturating_sub(w.seats);
            let q = &mut self.queues[qi];
            if w.tx.send(()).is_ok() {
                self.virtual_time = self.virtual_time.max(q.virtual_start);
                q.virtual_start += seats as u64;
                q.executing += seats;
                self.executing += seats;
            }
        }
    }

    /// The queue of the hand dealt by `hash` with the least work.
    fn choose_queue(&self, hash: u64, hand_size: usize) -> usize {
        let hand = deal(hash, self.queues.len(), hand_size);
        hand.into_iter()
            .min_by_key(|&i| {
                let q = &self.queues[i];
                (q.waiting.len() + q.executing, i)
            })
            .expect("non-empty hand")
    }

    fn waiting(&self) -> bool {
        self.queues.iter().any(|q| !q.waiting.is_empty())
    }
}

/// Shuffle sharding: `hand_size` distinct queue indices out of `deck`, drawn
/// from the hash's digits (upstream's `shufflesharding.Dealer`).
pub fn deal(mut hash: u64, deck: usize, hand_size: usize) -> Vec<usize> {
    let hand_size = hand_size.min(deck).max(1);
    let mut remaining: Vec<usize> = (0..deck).collect();
    let mut hand = Vec::with_capacity(hand_size);
    for i in 0..hand_size {
        let n = (deck - i) as u64;
        let pick = (hash % n) as usize;
        hash /= n;
        hand.push(remaining.swap_remove(pick));
    }
    hand
}

impl Level {
    pub fn new(kind: LevelKind, limit: usize) -> Arc<Level> {
        let level = Arc::new(Level {
            state: Mutex::new(State {
                kind: LevelKind::Reject,
                limit: 0,
                executing: 0,
                queues: Vec::new(),
                virtual_time: 0,
                next_id: 0,
                waiting_seats: 0,
                demand: Integrator::default(),
                stats: DemandStats::default(),
            }),
        });
        level.reconfigure(kind, limit);
        level
    }

    /// New limits; waiting requests stay queued (those in queues that no longer
    /// exist are rejected), and newly free seats are handed out.
    pub fn reconfigure(&self, kind: LevelKind, limit: usize) {
        let mut st = self.state.lock().expect("level lock");
        let queues = match kind {
            LevelKind::Queue { queues, .. } => queues,
            _ => 0,
        };
        if st.queues.len() > queues {
            // Their waiters are rejected (their senders dropped).
            let gone: usize = st.queues[queues..]
                .iter()
                .flat_map(|q| q.waiting.iter().map(|w| w.seats))
                .sum();
            st.waiting_seats = st.waiting_seats.saturating_sub(gone);
            st.queues.truncate(queues);
        }
        while st.queues.len() < queues {
            let vt = st.virtual_time;
            st.queues.push(Queue {
                virtual_start: vt,
                ..Queue::default()
            });
        }
        st.kind = kind;
        st.limit = limit;
        st.dispatch();
    }

    /// The current seat limit.
    pub fn limit(&self) -> usize {
        self.state.lock().expect("level lock").limit
    }

    /// A new current limit (seat borrowing); newly free seats are handed out.
    pub fn set_limit(&self, limit: usize) {
        let mut st = self.state.lock().expect("level lock");
        st.limit = limit;
        st.dispatch();
    }

    /// End the demand integration period: fold it into the smoothed demand
    /// and return the result.
    pub fn take_demand(&self) -> DemandStats {
        let mut st = self.state.lock().expect("level lock");
        let observed = st.demand.reset();
        st.stats.update(observed);
        st.stats
    }

    /// Forget the demand history (a level that starts over).
    pub fn reset_demand(&self) {
        let mut st = self.state.lock().expect("level lock");
        st.demand.reset();
        st.stats = DemandStats::default();
    }

    /// Seats taken now.
    pub fn executing(&self) -> usize {
        self.state.lock().expect("level lock").executing
    }

    pub fn waiting(&self) -> usize {
        let st = self.state.lock().expect("level lock");
        st.queues.iter().map(|q| q.waiting.len()).sum()
    }

    /// Wait for `seats` seats for flow `hash`, at most until `wait_until`.
    pub async fn admit(
        self: &Arc<Self>,
        hash: u64,
        seats: usize,
        wait_until: Instant,
    ) -> Admission {
        let seats = seats.max(1);
        let started = Instant::now();
        let (queue, id, rx) = {
            let mut guard = self.state.lock().expect("level lock");
            let st = &mut *guard;
            let (hand_size, length_limit) = match st.kind {
                LevelKind::Exempt => {
                    st.executing += seats;
                    st.note_demand();
                    return self.admitted(None, seats, started, false);
                }
                LevelKind::Reject => {
                    if st.fits(seats) {
                        st.executing += seats;
                        st.note_demand();
                        return self.admitted(None, seats, started, false);
                    }
                    return rejected(Rejection::ConcurrencyLimit, started, false);
                }
                LevelKind::Queue {
                    hand_size,
                    queue_length_limit,
                    ..
                } => (hand_size, queue_length_limit),
            };
            let qi = st.choose_queue(hash, hand_size);
            let vt = st.virtual_time;
            let q = &mut st.queues[qi];
            if q.waiting.is_empty() {
                q.virtual_start = q.virtual_start.max(vt);
            }
            if st.fits(seats) && !st.waiting() {
                let q = &mut st.queues[qi];
                st.virtual_time = st.virtual_time.max(q.virtual_start);
                q.virtual_start += seats as u64;
                q.executing += seats;
                st.executing += seats;
                st.note_demand();
                return self.admitted(Some(qi), seats, started, false);
            }
            if st.queues[qi].waiting.len() >= length_limit {
                return rejected(Rejection::QueueFull, started, false);
            }
            let (tx, rx) = oneshot::channel();
            let id = st.next_id;
            st.next_id += 1;
            st.queues[qi].waiting.push_back(Waiter { id, seats, tx });
            st.waiting_seats += seats;
            st.note_demand();
            (qi, id, rx)
        };
        let mut leave = Leave {
            level: self.clone(),
            queue,
            id,
            armed: true,
        };
        let dispatched = tokio::time::timeout_at(wait_until, rx).await;
        leave.armed = false;
        if let Ok(Ok(())) = dispatched {
            return self.admitted(Some(queue), seats, started, true);
        }
        // Timed out: leave the queue, unless a dispatch got there first.
        let mut st = self.state.lock().expect("level lock");
        if st.remove_waiter(queue, id) {
            return rejected(Rejection::TimeOut, started, true);
        }
        drop(st);
        match dispatched {
            // A dispatch raced the timeout: the seat is ours.
            Err(_) => self.admitted(Some(queue), seats, started, true),
            // The queue went away in a reconfiguration.
            Ok(_) => rejected(Rejection::TimeOut, started, true),
        }
    }

    fn admitted(
        self: &Arc<Self>,
        queue: Option<usize>,
        seats: usize,
        started: Instant,
        queued: bool,
    ) -> Admission {
        Admission {
            result: Ok(Seat {
                level: self.clone(),
                queue,
                seats,
            }),
            waited: started.elapsed(),
            queued,
        }
    }
}

fn rejected(why: Rejection, started: Instant, queued: bool) -> Admission {
    Admission {
        result: Err(why),
        waited: started.elapsed(),
        queued,
    }
}

/// Takes a waiter out of its queue when the waiting request is dropped (the
/// client went away, or the request deadline passed).
struct Leave {
    level: Arc<Level>,
    queue: usize,
    id: u64,
    armed: bool,
}

impl Drop for Leave {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut st = self.level.state.lock().expect("level lock");
        st.remove_waiter(self.queue, self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn deal_gives_distinct_cards() {
        for hash in [0u64, 1, 12345, u64::MAX] {
            let mut hand = deal(hash, 64, 8);
            hand.sort();
            hand.dedup();
            assert_eq!(hand.len(), 8);
            assert!(hand.iter().all(|&c| c < 64));
        }
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(3600)
    }

    #[tokio::test]
    async fn a_quiet_flow_goes_before_a_busy_one() {
        let kind = LevelKind::Queue {
            queues: 16,
            hand_size: 1,
            queue_length_limit: 2,
        };
        let level = Level::new(kind, 1);
        let (noisy, quiet) = (
            0u64,
            (0..).find(|h| deal(*h, 16, 1) != deal(0, 16, 1)).unwrap(),
        );
        let first = level.admit(noisy, 1, far()).await.result.unwrap();
        let l = level.clone();
        let n2 = tokio::spawn(async move { l.admit(noisy, 1, far()).await.result.is_ok() });
        let l = level.clone();
        let n3 = tokio::spawn(async move { l.admit(noisy, 1, far()).await.result.is_ok() });
        while level.waiting() < 2 {
            tokio::task::yield_now().await;
        }
        // The noisy flow's queue is full: more of it is refused at once.
        let over = level.admit(noisy, 1, far()).await;
        assert_eq!(over.result.err(), Some(Rejection::QueueFull));
        let l = level.clone();
        let q = tokio::spawn(async move { l.admit(quiet, 1, far()).await.result });
        while level.waiting() < 3 {
            tokio::task::yield_now().await;
        }
        drop(first);
        // The quiet flow's request got the freed seat, not the noisy ones.
        let _seat = q.await.unwrap().expect("quiet flow admitted");
        assert_eq!(level.waiting(), 2);
        n2.abort();
        n3.abort();
    }

    #[tokio::test]
    async fn waiting_ends_at_the_deadline_with_time_out() {
        let kind = LevelKind::Queue {
            queues: 4,
            hand_size: 2,
            queue_length_limit: 5,
        };
        let level = Level::new(kind, 1);
        let _seat = level.admit(1, 1, far()).await.result.unwrap();
        let a = level.admit(2, 1, Instant::now()).await;
        assert_eq!(a.result.err(), Some(Rejection::TimeOut));
        assert_eq!(level.waiting(), 0);
    }

    #[tokio::test]
    async fn wide_requests_wait_for_enough_seats() {
        let kind = LevelKind::Queue {
            queues: 1,
            hand_size: 1,
            queue_length_limit: 10,
        };
        let level = Level::new(kind, 4);
        let a = level.admit(1, 3, far()).await.result.unwrap();
        assert_eq!((a.seats(), level.executing()), (3, 3));
        // Two more seats do not fit next to three of four: it waits.
        let l = level.clone();
        let b = tokio::spawn(async move { l.admit(1, 2, far()).await.result });
        while level.waiting() < 1 {
            tokio::task::yield_now().await;
        }
        // Nor does a one-seat request jump the queue ahead of it.
        let l = level.clone();
        let c = tokio::spawn(async move { l.admit(1, 1, far()).await.result });
        while level.waiting() < 2 {
            tokio::task::yield_now().await;
        }
        assert_eq!(level.executing(), 3);
        drop(a);
        let b = b.await.unwrap().unwrap();
        let c = c.await.unwrap().unwrap();
        assert_eq!(level.executing(), 3);
        drop((b, c));
        assert_eq!(level.executing(), 0);
        // Wider than the whole limit: runs alone.
        let wide = level.admit(1, 9, far()).await.result.unwrap();
        assert_eq!(level.executing(), 9);
        drop(wide);
    }
}
