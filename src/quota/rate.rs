//! Kafka's sampled `Rate` (`SampledStat` with `quota.window.num` samples of
//! `quota.window.size.seconds`) and `QuotaUtils.throttleTime`: the delay
//! that brings the observed rate back to the quota, `(O - T) / T * W`.
//! Pure: time comes in as milliseconds.

use std::collections::VecDeque;

/// The sampling windows, from `quota.window.num` and
/// `quota.window.size.seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateConfig {
    /// Samples kept (Kafka's default 11).
    pub samples: usize,
    /// One sample's span in milliseconds (default 1,000).
    pub window_ms: u64,
}

impl RateConfig {
    /// The longest delay one violation earns: every sample's span (Kafka's
    /// `ClientQuotaManager.maxThrottleTimeMs`).
    pub fn max_throttle_ms(&self) -> u64 {
        self.window_ms * self.samples as u64
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    start_ms: u64,
    value: f64,
}

/// One client's observed rate of one quota type.
#[derive(Debug, Clone)]
pub struct SampledRate {
    config: RateConfig,
    samples: VecDeque<Sample>,
}

impl SampledRate {
    /// An empty rate.
    pub fn new(config: RateConfig) -> SampledRate {
        SampledRate {
            config,
            samples: VecDeque::new(),
        }
    }

    fn purge(&mut self, now_ms: u64) {
        let span = self.config.window_ms * self.config.samples as u64;
        while let Some(oldest) = self.samples.front() {
            if now_ms.saturating_sub(oldest.start_ms) >= span {
                self.samples.pop_front();
            } else {
                break;
            }
        }
    }

    /// Adds `value` at `now_ms`.
    pub fn record(&mut self, value: f64, now_ms: u64) {
        self.purge(now_ms);
        match self.samples.back_mut() {
            Some(current) if now_ms < current.start_ms + self.config.window_ms => {
                current.value += value
            }
            _ => {
                self.samples.push_back(Sample {
                    start_ms: now_ms,
                    value,
                });
                while self.samples.len() > self.config.samples {
                    self.samples.pop_front();
                }
            }
        }
    }

    /// Takes back a value recorded at `now_ms` (Kafka unrecords a fetch it
    /// answers empty because of throttling).
    pub fn unrecord(&mut self, value: f64, now_ms: u64) {
        self.record(-value, now_ms);
    }

    /// Kafka's `Rate.windowSize`: the time since the oldest sample, at
    /// least `samples - 1` full windows, at least 1 ms.
    pub fn window_size_ms(&mut self, now_ms: u64) -> u64 {
        self.purge(now_ms);
        let oldest = self.samples.front().map_or(now_ms, |s| s.start_ms);
        let mut elapsed = now_ms.saturating_sub(oldest);
        let full = elapsed / self.config.window_ms;
        let min_full = self.config.samples.saturating_sub(1) as u64;
        if full < min_full {
            elapsed += (min_full - full) * self.config.window_ms;
        }
        elapsed.max(1)
    }

    /// Units per second over the window.
    pub fn per_second(&mut self, now_ms: u64) -> f64 {
        let total: f64 = {
            self.purge(now_ms);
            self.samples.iter().map(|s| s.value).sum()
        };
        total * 1000.0 / self.window_size_ms(now_ms) as f64
    }

    /// Records `value` and returns the delay a violation of `bound` (units
    /// per second) earns, 0 within it, capped at every sample's span.
    pub fn record_and_throttle_ms(&mut self, value: f64, bound: f64, now_ms: u64) -> u64 {
        self.record(value, now_ms);
        self.throttle_ms(bound, now_ms)
    }

    /// The delay the current rate earns against `bound`, without recording.
    pub fn throttle_ms(&mut self, bound: f64, now_ms: u64) -> u64 {
        let observed = self.per_second(now_ms);
        if bound <= 0.0 {
            return if observed > 0.0 {
                self.config.max_throttle_ms()
            } else {
                0
            };
        }
        if observed <= bound {
            return 0;
        }
        let delay = (observed - bound) / bound * self.window_size_ms(now_ms) as f64;
        (delay.round() as u64).min(self.config.max_throttle_ms())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KAFKA: RateConfig = RateConfig {
        samples: 11,
        window_ms: 1000,
    };

    #[test]
    fn a_client_within_its_quota_is_never_delayed() {
        let mut rate = SampledRate::new(KAFKA);
        for second in 0..30u64 {
            // 900 B/s against a 1,000 B/s quota.
            assert_eq!(rate.record_and_throttle_ms(900.0, 1000.0, second * 1000), 0);
        }
    }

    #[test]
    fn the_delay_brings_the_rate_back_to_the_quota() {
        let mut rate = SampledRate::new(KAFKA);
        // 20,000 bytes at once against 1,000 B/s: the window counts as 10 s,
        // so the rate is 2,000 B/s and the delay (2000-1000)/1000 * 10 s.
        let delay = rate.record_and_throttle_ms(20_000.0, 1000.0, 0);
        assert_eq!(delay, 10_000);
    }

    #[test]
    fn a_client_that_waits_out_its_delays_runs_at_its_quota() {
        // A KIP-219 client: sends 10 kB, waits the delay it is given (at
        // least 10 ms between requests), sends again, for 120 s.
        let mut rate = SampledRate::new(KAFKA);
        let (mut now, mut sent) = (0u64, 0.0);
        while now < 120_000 {
            let delay = rate.record_and_throttle_ms(10_000.0, 50_000.0, now);
            sent += 10_000.0;
            now += delay.max(10);
        }
        let achieved = sent * 1000.0 / now as f64;
        assert!(
            (40_000.0..=60_000.0).contains(&achieved),
            "{achieved} B/s against a 50,000 B/s quota"
        );
    }

    #[test]
    fn delays_are_capped_and_old_samples_expire() {
        let mut rate = SampledRate::new(KAFKA);
        assert_eq!(rate.record_and_throttle_ms(1e12, 1.0, 0), 11_000);
        // After every sample's span the burst is forgotten.
        assert_eq!(rate.record_and_throttle_ms(1.0, 1000.0, 11_000), 0);
        rate.unrecord(1.0, 11_000);
        assert_eq!(rate.per_second(11_000), 0.0);
    }
}
