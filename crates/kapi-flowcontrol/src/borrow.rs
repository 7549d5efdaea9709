//! Seat borrowing between priority levels, as upstream's KEP-1040 borrowing
//! (`util/flowcontrol/apf_controller.go` `updateBorrowing`, `conc_alloc.go`,
//! `fairqueuing/integrator.go`).
//!
//! Each level has a nominal concurrency limit (its share of the server's
//! limit), a lower limit (nominal less what it lends, `lendablePercent`) and an
//! upper limit (nominal plus what it may borrow, `borrowingLimitPercent`; the
//! whole server limit when unset). Every adjustment period (10 s) the levels'
//! current limits are re-divided: each level's seat demand (seats executing
//! plus seats waiting) is integrated over the period ([`Integrator`]) and
//! smoothed ([`DemandStats`]); the sum of the nominal limits is then shared
//! out by [`allocate`], each level between its lower bound (at least what it
//! used, up to its nominal limit) and its upper limit, in proportion to its
//! smoothed demand.
//!
//! Invariant: the current limits sum to the sum of the nominal limits (up to
//! rounding); a level never gets less than its lower limit nor more than its
//! upper limit.

use std::time::{Duration, Instant};

/// How often the current limits are re-divided (upstream's
/// `borrowingAdjustmentPeriod`).
pub const PERIOD: Duration = Duration::from_secs(10);

/// Decay of the smoothed demand per period (upstream's
/// `seatDemandSmoothingCoefficient`: a half-life of five minutes).
const SMOOTHING: f64 = 0.977;

/// Targets below this count as this (no division by zero).
const MIN_TARGET: f64 = 0.001;
const EPSILON: f64 = 0.000_000_1;

/// A level's configured limits, in seats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub nominal: usize,
    /// Nominal less the lendable seats.
    pub lower: usize,
    /// Nominal plus the seats it may borrow.
    pub upper: usize,
    /// What the level starts with: nominal less half the lendable seats.
    pub initial: usize,
}

impl Bounds {
    /// Bounds from the nominal limit and the two percentages (rounded as
    /// upstream: half away from zero).
    pub fn new(
        nominal: usize,
        lendable_percent: Option<u64>,
        borrowing_percent: Option<u64>,
        server_limit: usize,
    ) -> Bounds {
        let pct = |p: u64| (nominal as f64 * p as f64 / 100.0).round() as usize;
        let lendable = lendable_percent.map_or(0, pct).min(nominal);
        let borrowing = borrowing_percent.map_or(server_limit, pct);
        Bounds {
            nominal,
            lower: nominal - lendable,
            upper: nominal + borrowing,
            initial: nominal - lendable / 2,
        }
    }
}

/// What an [`Integrator`] reports for one period.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Observed {
    pub seconds: f64,
    pub average: f64,
    /// Standard deviation; NaN when undefined.
    pub deviation: f64,
    pub max: f64,
}

/// Time-weighted moments of a value that changes in steps.
#[derive(Debug, Clone)]
pub struct Integrator {
    last: Instant,
    x: f64,
    seconds: f64,
    integral_x: f64,
    integral_xx: f64,
    max: f64,
}

impl Default for Integrator {
    fn default() -> Integrator {
        Integrator::new_at(Instant::now())
    }
}

impl Integrator {
    fn new_at(now: Instant) -> Integrator {
        Integrator {
            last: now,
            x: 0.0,
            seconds: 0.0,
            integral_x: 0.0,
            integral_xx: 0.0,
            max: 0.0,
        }
    }

    fn advance(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.seconds += dt;
        self.integral_x += self.x * dt;
        self.integral_xx += self.x * self.x * dt;
    }

    /// The value is `x` from now on.
    pub fn set(&mut self, x: f64) {
        self.set_at(x, Instant::now());
    }

    fn set_at(&mut self, x: f64, now: Instant) {
        if x == self.x {
            return;
        }
        self.advance(now);
        self.x = x;
        self.max = self.max.max(x);
    }

    /// The period's results; a new period starts now at the current value.
    pub fn reset(&mut self) -> Observed {
        self.reset_at(Instant::now())
    }

    fn reset_at(&mut self, now: Instant) -> Observed {
        self.advance(now);
        let (average, deviation) = if self.seconds > 0.0 {
            let avg = self.integral_x / self.seconds;
            let variance = self.integral_xx / self.seconds - avg * avg;
            // Rounding can make a constant's variance slightly negative.
            let dev = if variance >= -EPSILON {
                variance.max(0.0).sqrt()
            } else {
                f64::NAN
            };
            (avg, dev)
        } else {
            (f64::NAN, f64::NAN)
        };
        let out = Observed {
            seconds: self.seconds,
            average,
            deviation,
            max: self.max,
        };
        self.seconds = 0.0;
        self.integral_x = 0.0;
        self.integral_xx = 0.0;
        self.max = self.x;
        out
    }
}

/// A level's seat demand over the last periods.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DemandStats {
    pub average: f64,
    pub deviation: f64,
    pub high_watermark: f64,
    pub smoothed: f64,
}

impl DemandStats {
    /// Take in one period: the envelope (average + deviation) raises the
    /// smoothed demand at once and lowers it slowly.
    pub fn update(&mut self, obs: Observed) {
        self.high_watermark = obs.max;
        if obs.seconds <= 0.0 {
            return;
        }
        let deviation = if obs.deviation.is_nan() {
            0.0
        } else {
            obs.deviation
        };
        self.average = obs.average;
        self.deviation = deviation;
        let envelope = obs.average + deviation;
        self.smoothed = envelope.max(SMOOTHING * self.smoothed + (1.0 - SMOOTHING) * envelope);
    }
}

/// One level's part of an allocation problem.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Item {
    pub target: f64,
    pub lower: f64,
    pub upper: f64,
}

/// Share `required` among `items`: each gets `fair * target` clamped to its
/// bounds, with the one `fair` proportion that makes the shares sum to
/// `required`. Returns the shares and `fair`; an error when the bounds cannot
/// sum to `required`.
pub fn allocate(required: f64, items: &[Item]) -> Result<(Vec<f64>, f64), String> {
    for (i, it) in items.iter().enumerate() {
        if it.lower < 0.0 || it.target < it.lower || it.upper < it.lower {
            return Err(format!("item {i} has inconsistent bounds: {it:?}"));
        }
    }
    let target = |it: &Item| it.target.max(MIN_TARGET);
    let low: f64 = items.iter().map(|i| i.lower).sum();
    let high: f64 = items.iter().map(|i| i.upper).sum();
    if low - required > EPSILON {
        return Err(format!("lower bounds sum to {low}, above {required}"));
    }
    if required - high > EPSILON {
        return Err(format!("upper bounds sum to {high}, below {required}"));
    }
    if required <= 0.0 {
        return Ok((vec![0.0; items.len()], 0.0));
    }
    let ratios = |f: fn(&Item) -> f64| items.iter().map(move |i| f(i) / target(i));
    if low - required > -EPSILON {
        let fair = ratios(|i| i.lower).fold(f64::INFINITY, f64::min);
        return Ok((items.iter().map(|i| i.lower).collect(), fair));
    }
    if required - high > -EPSILON {
        let fair = ratios(|i| i.upper).fold(0.0, f64::max);
        return Ok((items.iter().map(|i| i.upper).collect(), fair));
    }
    // The total as a function of `fair` is continuous, non-decreasing and
    // linear between the points where some item reaches a bound: find the
    // segment where it crosses `required` and interpolate.
    let total = |fair: f64| -> f64 {
        items
            .iter()
            .map(|i| (fair * target(i)).clamp(i.lower, i.upper))
            .sum()
    };
    let mut points: Vec<f64> = ratios(|i| i.lower).chain(ratios(|i| i.upper)).collect();
    points.sort_by(f64::total_cmp);
    points.dedup();
    let mut fair = points[0];
    let mut below = total(fair);
    for &p in &points[1..] {
        let at = total(p);
        if at >= required {
            fair = if at > below {
                fair + (required - below) * (p - fair) / (at - below)
            } else {
                p
            };
            break;
        }
        fair = p;
        below = at;
    }
    let shares = items
        .iter()
        .map(|i| (fair * target(i)).clamp(i.lower, i.upper))
        .collect();
    Ok((shares, fair))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(target: f64, lower: f64, upper: f64) -> Item {
        Item {
            target,
            lower,
            upper,
        }
    }

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6)
    }

    #[test]
    fn bounds_follow_the_percentages() {
        assert_eq!(
            Bounds::new(48, Some(100), None, 100),
            Bounds {
                nominal: 48,
                lower: 0,
                upper: 148,
                initial: 24
            }
        );
        assert_eq!(
            Bounds::new(48, Some(0), Some(50), 100),
            Bounds {
                nominal: 48,
                lower: 48,
                upper: 72,
                initial: 48
            }
        );
        // 33 % of 61 is 20.13: rounds to 20 lendable seats.
        let b = Bounds::new(61, Some(33), None, 600);
        assert_eq!((b.lower, b.upper, b.initial), (41, 661, 51));
    }

    #[test]
    fn unconstrained_shares_are_proportional_to_targets() {
        let (shares, fair) =
            allocate(30.0, &[item(10.0, 0.0, 100.0), item(20.0, 0.0, 100.0)]).unwrap();
        assert!(close(&shares, &[10.0, 20.0]));
        assert!((fair - 1.0).abs() < 1e-9);
    }

    #[test]
    fn bounds_clamp_and_the_rest_is_shared() {
        // The first is capped at 12; the other two share the remaining 88.
        let items = [
            item(50.0, 0.0, 12.0),
            item(10.0, 0.0, 100.0),
            item(30.0, 0.0, 100.0),
        ];
        let (shares, fair) = allocate(100.0, &items).unwrap();
        assert!(close(&shares, &[12.0, 22.0, 66.0]), "{shares:?}");
        assert!((fair - 2.2).abs() < 1e-9);
        // A lower bound above the fair share holds.
        let items = [item(5.0, 5.0, 5.0), item(1.0, 0.0, 100.0)];
        let (shares, _) = allocate(10.0, &items).unwrap();
        assert!(close(&shares, &[5.0, 5.0]), "{shares:?}");
        // Idle items (tiny targets) get next to nothing while a busy one can
        // take its upper bound.
        let items = [
            item(48.0, 48.0, 72.0),
            item(0.0, 0.0, 148.0),
            item(5.0, 5.0, 105.0),
        ];
        let (shares, _) = allocate(101.0, &items).unwrap();
        assert!((shares[0] - 72.0).abs() < 1e-9, "{shares:?}");
        assert!(shares[1] < 0.5, "{shares:?}");
        assert!((shares.iter().sum::<f64>() - 101.0).abs() < 1e-6);
    }

    #[test]
    fn tight_and_impossible_problems() {
        let items = [item(10.0, 4.0, 10.0), item(10.0, 6.0, 10.0)];
        assert!(close(&allocate(10.0, &items).unwrap().0, &[4.0, 6.0]));
        assert!(close(&allocate(20.0, &items).unwrap().0, &[10.0, 10.0]));
        assert!(allocate(9.0, &items).is_err());
        assert!(allocate(21.0, &items).is_err());
        assert!(allocate(5.0, &[item(1.0, 2.0, 3.0)]).is_err());
    }

    #[test]
    fn smoothed_demand_rises_at_once_and_decays_slowly() {
        let mut s = DemandStats::default();
        let obs = |avg: f64, max: f64| Observed {
            seconds: 10.0,
            average: avg,
            deviation: 0.0,
            max,
        };
        s.update(obs(40.0, 40.0));
        assert_eq!((s.smoothed, s.high_watermark), (40.0, 40.0));
        s.update(obs(0.0, 0.0));
        assert!((s.smoothed - 40.0 * SMOOTHING).abs() < 1e-9);
        // An empty period changes only the high watermark.
        let before = s.smoothed;
        s.update(Observed {
            max: 3.0,
            ..Observed::default()
        });
        assert_eq!((s.smoothed, s.high_watermark), (before, 3.0));
    }

    #[test]
    fn the_integrator_weighs_values_by_time() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut i = Integrator::new_at(t0);
        i.set_at(4.0, at(0));
        i.set_at(0.0, at(1));
        let o = i.reset_at(at(4));
        assert!((o.seconds - 4.0).abs() < 1e-9);
        assert!((o.average - 1.0).abs() < 1e-9);
        assert!((o.deviation - 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(o.max, 4.0);
        // The next period starts at the current value.
        let o = i.reset_at(at(5));
        assert_eq!((o.average, o.max), (0.0, 0.0));
        // A constant: no deviation.
        i.set_at(60.0, at(5));
        let o = i.reset_at(at(6));
        let o2 = i.reset_at(at(9));
        assert_eq!(
            (o.max, o2.average, o2.deviation, o2.max),
            (60.0, 60.0, 0.0, 60.0)
        );
    }
}
