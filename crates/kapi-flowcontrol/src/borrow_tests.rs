//! Seat borrowing through [`FlowControl`]: a busy level runs more requests
//! than its nominal limit with the seats an idle level lends, never more than
//! its borrowing limit allows. The adjustment is called directly; the results
//! do not depend on how long anything takes (only that some time passes
//! between two adjustments, which a short sleep guarantees).

use std::time::Duration;

use tokio::time::Instant;

use super::config::{LevelKind, LevelSpec};
use super::*;

fn spec(name: &str, shares: u64, lendable: u64, borrowing: Option<u64>) -> LevelSpec {
    LevelSpec {
        name: name.into(),
        uid: String::new(),
        kind: LevelKind::Queue {
            queues: 8,
            hand_size: 2,
            queue_length_limit: 100,
        },
        shares,
        lendable: Some(lendable),
        borrowing,
    }
}

/// `a` and `b` alike but for `a`'s borrowing limit; `lender` lends all of
/// its seats; the catch-all level is added by `reconfigure`.
fn levels(a_borrowing: Option<u64>) -> Vec<LevelSpec> {
    vec![
        spec("a", 20, 0, a_borrowing),
        spec("b", 20, 0, None),
        spec("lender", 60, 100, None),
    ]
}

fn far() -> Instant {
    Instant::now() + Duration::from_secs(3600)
}

/// Make sure the clock moves before the next adjustment.
fn tick() {
    std::thread::sleep(Duration::from_millis(2));
}

#[tokio::test]
async fn a_busy_level_borrows_lent_seats_up_to_its_borrowing_limit() {
    let m = Metrics::default();
    let fc = FlowControl::new(100, Duration::from_secs(60), m.clone());
    // 100 seats by shares 20 + 20 + 60 + 5 (catch-all): nominal limits
    // 20, 20, 58 and 5. `a` may borrow 100 % of its nominal limit: 40 at most.
    fc.reconfigure(levels(Some(100)), Vec::new());
    let (nominal, lower, upper, current) = fc.level_limits("a").unwrap();
    assert_eq!((nominal, lower, upper), (20, 20, 40));
    let (n, l, u, _) = fc.level_limits("lender").unwrap();
    assert_eq!((n, l, u), (58, 0, 158));
    assert!(current <= upper);

    // 60 requests of one flow on `a`.
    let level = fc.level("a").unwrap();
    let mut held = Vec::new();
    let mut waiting = Vec::new();
    for _ in 0..60 {
        let l = level.clone();
        let task = tokio::spawn(async move { l.admit(7, 1, far()).await.result.ok() });
        waiting.push(task);
    }
    while level.executing() + level.waiting() < 60 {
        tokio::task::yield_now().await;
    }
    tick();
    fc.update_borrowing();
    // More than its nominal 20 run, but no more than its upper limit 40.
    assert_eq!(fc.level_limits("a").unwrap().3, 40);
    assert_eq!((level.executing(), level.waiting()), (40, 20));
    assert_eq!(m.value(&DEMAND_HIGH, &["a"]), 60.0);
    assert!(m.value(&DEMAND_SMOOTHED, &["a"]) > 0.0);
    assert_eq!(m.value(&CURRENT_LIMIT, &["a"]), 40.0);
    assert_eq!(m.value(&UPPER_LIMIT, &["a"]), 40.0);
    assert_eq!(m.value(&LOWER_LIMIT, &["a"]), 20.0);
    assert_eq!(m.value(&NOMINAL, &["a"]), 20.0);

    // Without a borrowing limit the demand decides. A period of constant
    // demand 60 makes a's smoothed demand at least 60: the 103 nominal seats
    // go by targets >= 60 (a), 20 (b), 5 (catch-all) and ~0 (lender), which
    // gives a at least 103 * 60 / 85 = 72.7 seats.
    tick();
    fc.reconfigure(levels(None), Vec::new());
    let (nominal, lower, upper, current) = fc.level_limits("a").unwrap();
    assert_eq!((nominal, lower, upper), (20, 20, 120));
    assert!((72..=80).contains(&current), "{current}");
    let b = fc.level_limits("b").unwrap().3;
    assert!((20..=25).contains(&b), "{b}");
    assert_eq!(fc.level_limits("lender").unwrap().3, 0);
    while level.waiting() > 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(level.executing(), 60);
    for t in waiting {
        held.push(t.await.unwrap().expect("admitted"));
    }
    assert_eq!(held.len(), 60);

    // Whatever the demand, the current limits share the nominal sum (103).
    drop(held);
    assert_eq!(level.executing(), 0);
    tick();
    fc.update_borrowing();
    let sum: usize = ["a", "b", "lender", "catch-all"]
        .iter()
        .map(|n| fc.level_limits(n).unwrap().3)
        .sum();
    assert!((102..=104).contains(&sum), "{sum}");
}

#[tokio::test]
async fn a_level_that_lends_nothing_keeps_its_nominal_seats() {
    let fc = FlowControl::new(100, Duration::from_secs(60), Metrics::default());
    fc.reconfigure(levels(Some(100)), Vec::new());
    // Demand on every level, at least its nominal limit: nobody lends what
    // it uses, so every level gets its nominal limit back (the lower bounds
    // use up the whole sum).
    let load = [("a", 60), ("b", 60), ("lender", 60), ("catch-all", 10)];
    let mut tasks = Vec::new();
    for (name, n) in load {
        let level = fc.level(name).unwrap();
        for _ in 0..n {
            let l = level.clone();
            tasks.push(tokio::spawn(async move {
                l.admit(3, 1, far()).await.result.ok()
            }));
        }
    }
    for (name, n) in load {
        let level = fc.level(name).unwrap();
        while level.executing() + level.waiting() < n {
            tokio::task::yield_now().await;
        }
    }
    fc.update_borrowing();
    for (name, nominal) in [("a", 20), ("b", 20), ("lender", 58), ("catch-all", 5)] {
        assert_eq!(fc.level_limits(name).unwrap().3, nominal, "{name}");
    }
    for t in tasks {
        t.abort();
    }
}
