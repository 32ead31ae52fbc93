//! Recent latency quantiles, as Kafka's Yammer histograms give them
//! (`...><>99thPercentile` is `quantile="0.99"` through the exporter).
//!
//! Kafka's reservoir leans on the last five minutes; here two windows of
//! `WINDOW_SECS` take turns, and a quantile is read over the current and
//! the previous one: what the last 30 to 60 seconds looked like. Each
//! window counts samples in log-linear buckets (16 per power of two of
//! microseconds, under 5 % error), so recording is one atomic add.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;

const WINDOW_SECS: u64 = 30;
const SUB_BUCKETS: usize = 16;
/// Powers of two of microseconds: up to 2^38 µs, about three days.
const POWERS: usize = 38;
const BUCKETS: usize = POWERS * SUB_BUCKETS;

/// The quantiles Kafka's MBeans carry that dashboards read.
pub const QUANTILES: [(f64, &str); 6] = [
    (0.5, "0.50"),
    (0.75, "0.75"),
    (0.95, "0.95"),
    (0.98, "0.98"),
    (0.99, "0.99"),
    (0.999, "0.999"),
];

#[derive(Debug)]
struct Window {
    /// Which window of time these counts belong to.
    epoch: AtomicU64,
    counts: Vec<AtomicU64>,
}

/// One latency's two windows.
#[derive(Debug)]
pub struct Latency {
    started: Instant,
    windows: [Window; 2],
    /// Held while a window is emptied for reuse.
    turning: Mutex<()>,
    total: AtomicU64,
}

impl Default for Latency {
    fn default() -> Self {
        let window = || Window {
            epoch: AtomicU64::new(0),
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        };
        Latency {
            started: Instant::now(),
            windows: [window(), window()],
            turning: Mutex::new(()),
            total: AtomicU64::new(0),
        }
    }
}

fn bucket_of(micros: u64) -> usize {
    if micros < SUB_BUCKETS as u64 {
        return micros as usize;
    }
    let power = 63 - micros.leading_zeros() as usize; // micros >= 2^power
    let shift = power - 4; // SUB_BUCKETS = 2^4 steps within the power
    let sub = ((micros >> shift) as usize) & (SUB_BUCKETS - 1);
    ((power - 3) * SUB_BUCKETS + sub).min(BUCKETS - 1)
}

/// The smallest microseconds bucket `index` holds.
fn lower_bound(index: usize) -> u64 {
    if index < SUB_BUCKETS {
        return index as u64;
    }
    let power = index / SUB_BUCKETS + 3;
    let sub = (index % SUB_BUCKETS) as u64;
    (1u64 << power) + (sub << (power - 4))
}

impl Latency {
    fn epoch(&self) -> u64 {
        self.started.elapsed().as_secs() / WINDOW_SECS + 1
    }

    pub fn record(&self, took: Duration) {
        let epoch = self.epoch();
        let window = &self.windows[(epoch % 2) as usize];
        if window.epoch.load(Ordering::Acquire) != epoch {
            let _turning = self.turning.lock().unwrap_or_else(|p| p.into_inner());
            if window.epoch.load(Ordering::Acquire) != epoch {
                for count in &window.counts {
                    count.store(0, Ordering::Relaxed);
                }
                window.epoch.store(epoch, Ordering::Release);
            }
        }
        let micros = took.as_micros().min(u64::MAX as u128) as u64;
        window.counts[bucket_of(micros)].fetch_add(1, Ordering::Relaxed);
        self.total.fetch_add(1, Ordering::Relaxed);
    }

    /// Samples ever recorded.
    pub fn count(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// The `q` quantile in milliseconds over the current and previous
    /// windows; 0 when they hold no sample.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        let epoch = self.epoch();
        let mut merged = vec![0u64; BUCKETS];
        for window in &self.windows {
            let at = window.epoch.load(Ordering::Acquire);
            if at + 1 >= epoch {
                for (sum, count) in merged.iter_mut().zip(&window.counts) {
                    *sum += count.load(Ordering::Relaxed);
                }
            }
        }
        let samples: u64 = merged.iter().sum();
        if samples == 0 {
            return 0.0;
        }
        let rank = ((q * samples as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (index, count) in merged.iter().enumerate() {
            seen += count;
            if seen >= rank {
                // The bucket's middle: its bounds are within 1/16 apart.
                let low = lower_bound(index) as f64;
                let high = lower_bound((index + 1).min(BUCKETS - 1)) as f64;
                return (low + high.max(low)) / 2.0 / 1000.0;
            }
        }
        0.0
    }
}

/// Encodes a family of latencies as the exporter does: one gauge per
/// quantile, labelled `quantile` (and `label`, when the family has one),
/// and `_count`.
#[derive(Debug)]
pub(super) struct LatencyCollector {
    pub name: &'static str,
    pub help: &'static str,
    /// The label the map's keys are values of (`request`); `None`: one
    /// latency, under the key "".
    pub label: Option<&'static str>,
    pub series: Arc<RwLock<HashMap<String, Arc<Latency>>>>,
}

impl Collector for LatencyCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let latencies: Vec<(String, Arc<Latency>)> = {
            let map = self.series.read().unwrap_or_else(|p| p.into_inner());
            map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        let labels = |value: &str, quantile: Option<&str>| -> Vec<(String, String)> {
            let mut labels = Vec::new();
            if let Some(label) = self.label {
                labels.push((label.to_string(), value.to_string()));
            }
            if let Some(q) = quantile {
                labels.push(("quantile".to_string(), q.to_string()));
            }
            labels
        };
        let gauge = ConstGauge::new(0.0f64);
        let mut family =
            encoder.encode_descriptor(self.name, self.help, None, gauge.metric_type())?;
        for (key, latency) in &latencies {
            for (q, label) in QUANTILES {
                let labels = labels(key, Some(label));
                let metric = family.encode_family(&labels)?;
                ConstGauge::new(latency.quantile_ms(q)).encode(metric)?;
            }
        }
        let count_name = format!("{}_count", self.name);
        let mut family =
            encoder.encode_descriptor(&count_name, "Samples", None, gauge.metric_type())?;
        for (key, latency) in &latencies {
            let labels = labels(key, None);
            let metric = family.encode_family(&labels)?;
            ConstGauge::new(latency.count() as f64).encode(metric)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_tight() {
        let mut last = 0;
        for micros in [0u64, 1, 15, 16, 17, 31, 32, 100, 1_000, 65_536, 10_000_000] {
            let index = bucket_of(micros);
            assert!(index >= last, "{micros}");
            last = index;
            let low = lower_bound(index);
            let high = lower_bound(index + 1);
            assert!(low <= micros && micros < high.max(low + 1), "{micros}: {low}..{high}");
            assert!((high - low) as f64 <= (micros.max(16) as f64) / 15.0, "{micros}");
        }
    }

    #[test]
    fn quantiles_read_the_samples() {
        let latency = Latency::default();
        for ms in 1..=1000u64 {
            latency.record(Duration::from_millis(ms));
        }
        let p50 = latency.quantile_ms(0.5);
        let p99 = latency.quantile_ms(0.99);
        assert!((475.0..=525.0).contains(&p50), "{p50}");
        assert!((940.0..=1040.0).contains(&p99), "{p99}");
        assert_eq!(latency.count(), 1000);
        assert_eq!(Latency::default().quantile_ms(0.99), 0.0);
    }
}
