//! Work estimation: how many seats a request occupies, as upstream's
//! `util/flowcontrol/request` (`list_work_estimator.go`,
//! `mutating_work_estimator.go`, defaults from `config.go`).
//!
//! - LIST: one seat per 100 objects it will process — all stored objects of the
//!   resource when served from the cache, stored + limit with selectors,
//!   otherwise twice the limit — between 1 and the level's max seats.
//! - Writes (create, update, patch, delete, deletecollection): one seat while
//!   executing, then one seat per 10 watchers of the resource held for the
//!   time the watch events take (5 ms per event, spread over those seats);
//!   none when at most one seat would be needed.
//! - Everything else: one seat.
//!
//! A level's max seats is 15 % of its nominal limit, between 1 and 10
//! (upstream's `MaxSeats`).

use std::sync::Arc;
use std::time::Duration;

use kapi_http::request::{Query, RequestInfo};

const OBJECTS_PER_SEAT: f64 = 100.0;
const WATCHES_PER_SEAT: f64 = 10.0;
const EVENT_DURATION: Duration = Duration::from_millis(5);
const MAX_SEATS: usize = 10;

/// Counts of a resource: (stored objects, watchers).
pub type Counter = Arc<dyn Fn(&RequestInfo) -> (usize, usize) + Send + Sync>;

/// A request's estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// Seats reserved when dispatched: max(initial, final).
    pub seats: usize,
    /// How long the seats stay held after the response (watch notification).
    pub hold: Duration,
}

impl Estimate {
    pub const ONE: Estimate = Estimate {
        seats: 1,
        hold: Duration::ZERO,
    };
}

/// The max seats of a level of nominal limit `nominal`.
pub fn max_seats(nominal: usize) -> usize {
    ((nominal as f64 * 0.15).ceil() as usize).clamp(1, MAX_SEATS)
}

/// The estimate of a request (`verb` as the filter computed it).
pub fn estimate(
    info: Option<&RequestInfo>,
    verb: &str,
    query: &Query,
    counter: Option<&Counter>,
    max: usize,
) -> Estimate {
    let (Some(info), Some(counter)) = (info, counter) else {
        return Estimate::ONE;
    };
    if info.subresource.is_some() && verb != "list" {
        return Estimate::ONE;
    }
    match verb {
        "list" => {
            let (stored, _) = counter(info);
            Estimate {
                seats: list_seats(stored, query, max),
                hold: Duration::ZERO,
            }
        }
        "create" | "update" | "patch" | "delete" | "deletecollection" => {
            let (_, watchers) = counter(info);
            write_estimate(watchers, max)
        }
        _ => Estimate::ONE,
    }
}

fn list_seats(stored: usize, query: &Query, max: usize) -> usize {
    let stored = stored as f64;
    let limit = query
        .get("limit")
        .and_then(|l| l.parse::<f64>().ok())
        .filter(|l| *l > 0.0 && *l < stored)
        .unwrap_or(stored);
    let limited = query.get("limit").is_some_and(|l| l != "0");
    let from_cache = !limited || query.get("resourceVersion") == Some("0");
    let selectors = query.get("labelSelector").is_some_and(|s| !s.is_empty())
        || query.get("fieldSelector").is_some_and(|s| !s.is_empty());
    let objects = if from_cache {
        stored
    } else if selectors {
        stored + limit
    } else {
        2.0 * limit
    };
    ((objects / OBJECTS_PER_SEAT).ceil() as usize).clamp(1, max.max(1))
}

fn write_estimate(watchers: usize, max: usize) -> Estimate {
    if watchers == 0 {
        return Estimate::ONE;
    }
    let work = EVENT_DURATION * watchers as u32;
    let mut seats = (watchers as f64 / WATCHES_PER_SEAT).ceil() as usize;
    if seats <= 1 {
        return Estimate::ONE;
    }
    seats = seats.min(max.max(1));
    Estimate {
        seats,
        hold: work / seats as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(resource: &str) -> RequestInfo {
        RequestInfo {
            group: String::new(),
            version: "v1".into(),
            namespace: None,
            resource: resource.into(),
            name: None,
            subresource: None,
            rest: String::new(),
            verb: "list",
        }
    }

    fn counter(stored: usize, watchers: usize) -> Counter {
        Arc::new(move |_: &RequestInfo| (stored, watchers))
    }

    #[test]
    fn max_seats_are_fifteen_percent_of_the_nominal_limit() {
        assert_eq!(max_seats(0), 1);
        assert_eq!(max_seats(13), 2);
        assert_eq!(max_seats(49), 8);
        assert_eq!(max_seats(245), 10);
    }

    #[test]
    fn lists_take_a_seat_per_hundred_objects() {
        let q = |s: &str| Query::parse(Some(s));
        let i = info("pods");
        let est = |stored, query: &str| {
            estimate(Some(&i), "list", &q(query), Some(&counter(stored, 0)), 10).seats
        };
        assert_eq!(est(0, ""), 1);
        assert_eq!(est(150, ""), 2);
        assert_eq!(est(5000, ""), 10);
        // Paginated from storage: twice the limit; with selectors stored + limit.
        assert_eq!(est(5000, "limit=100"), 2);
        assert_eq!(est(500, "limit=100&labelSelector=a%3Db"), 6);
        // resourceVersion=0 is served from the cache: all stored objects.
        assert_eq!(est(500, "limit=100&resourceVersion=0"), 5);
        // Capped by the level's max seats.
        assert_eq!(
            estimate(Some(&i), "list", &q(""), Some(&counter(5000, 0)), 3).seats,
            3
        );
        // Other verbs and non-resource requests: one seat.
        assert_eq!(
            estimate(Some(&i), "get", &q(""), Some(&counter(5000, 0)), 10),
            Estimate::ONE
        );
        assert_eq!(estimate(None, "get", &q(""), None, 10), Estimate::ONE);
    }

    #[test]
    fn writes_pay_for_their_watchers() {
        let q = Query::parse(None);
        let i = info("configmaps");
        let est = |w| estimate(Some(&i), "create", &q, Some(&counter(0, w)), 10);
        assert_eq!(est(0), Estimate::ONE);
        assert_eq!(est(10), Estimate::ONE);
        assert_eq!(
            est(35),
            Estimate {
                seats: 4,
                hold: Duration::from_micros(43_750)
            }
        );
        assert_eq!(est(1000).seats, 10);
        assert_eq!(est(1000).hold, Duration::from_millis(500));
    }
}
