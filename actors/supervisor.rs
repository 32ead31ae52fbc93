//! Supervision policy: how often an actor may restart before its supervisor
//! stops restarting it and escalates. actix restarts a `Supervised` actor as
//! soon as it stops; this adds what actix lacks, a bound, because restart
//! storms bring whole systems down (a lesson the seeds state).
//!
//! It never restarts anything itself; supervisors consult it.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// At most `max_restarts` restarts within `window`.
#[derive(Debug, Clone)]
pub struct RestartBudget {
    max_restarts: usize,
    window: Duration,
    recent: VecDeque<Instant>,
}

impl Default for RestartBudget {
    fn default() -> Self {
        RestartBudget::new(5, Duration::from_secs(60))
    }
}

impl RestartBudget {
    pub fn new(max_restarts: usize, window: Duration) -> Self {
        RestartBudget {
            max_restarts,
            window,
            recent: VecDeque::with_capacity(max_restarts + 1),
        }
    }

    /// Record a restart at `now`; false when the budget is spent and the
    /// supervisor should escalate instead of restarting again.
    pub fn record_restart(&mut self, now: Instant) -> bool {
        while let Some(&oldest) = self.recent.front() {
            if now.duration_since(oldest) > self.window {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        if self.recent.len() >= self.max_restarts {
            return false;
        }
        self.recent.push_back(now);
        true
    }

    /// How long to wait before the next restart: doubling from 100 ms with
    /// each recent restart, at most 30 s.
    pub fn backoff(&self) -> Duration {
        let exponent = self.recent.len().min(9) as u32;
        Duration::from_millis(100 * 2u64.pow(exponent)).min(Duration::from_secs(30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The budget refuses the restart past the limit and recovers once the
    /// window has moved on.
    #[test]
    fn restarts_are_bounded_per_window() {
        let mut budget = RestartBudget::new(3, Duration::from_secs(10));
        let t0 = Instant::now();
        assert!(budget.record_restart(t0));
        assert!(budget.record_restart(t0 + Duration::from_secs(1)));
        assert!(budget.record_restart(t0 + Duration::from_secs(2)));
        assert!(!budget.record_restart(t0 + Duration::from_secs(3)));
        assert!(budget.backoff() >= Duration::from_millis(800));
        assert!(budget.record_restart(t0 + Duration::from_secs(12)));
    }
}
