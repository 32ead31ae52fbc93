//! A librdkafka producer with `enable.idempotence=true` for the tests that
//! break things under it (a lost acknowledgement, a broker SIGKILL), and the
//! check they share: every id stored exactly once, in order.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;

use super::{client_config, drain_ids};

#[derive(Clone, Default)]
struct Deliveries {
    acked: Arc<AtomicU64>,
    failures: Arc<Mutex<Vec<String>>>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => {
                self.acked.fetch_add(1, Ordering::SeqCst);
            }
            Err((e, message)) => {
                let id =
                    String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned();
                if let Ok(mut failures) = self.failures.lock() {
                    failures.push(format!("id {id}: {e}"));
                }
            }
        }
    }
}

/// Ids `0..records` sent from a thread of their own, id `i` to partition
/// `i % partitions`, with idempotence on.
pub struct IdempotentProducer {
    deliveries: Deliveries,
    sender: std::thread::JoinHandle<()>,
}

impl IdempotentProducer {
    pub fn start(bootstrap: &str, topic: &str, partitions: i32, records: u64) -> Self {
        let deliveries = Deliveries::default();
        let producer: ThreadedProducer<Deliveries> = client_config(bootstrap)
            .set("enable.idempotence", "true")
            .set("message.timeout.ms", "120000")
            .set("linger.ms", "2")
            .set("retry.backoff.ms", "50")
            .create_with_context(deliveries.clone())
            .expect("idempotent producer");
        let topic = topic.to_string();
        let sender = std::thread::spawn(move || {
            for id in 0..records {
                let payload = id.to_string();
                let partition = (id % partitions as u64) as i32;
                loop {
                    let record = BaseRecord::<(), _>::to(&topic)
                        .partition(partition)
                        .payload(&payload);
                    match producer.send(record) {
                        Ok(()) => break,
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
                // A steady stream, so faults land mid-production.
                if id % 100 == 99 {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            producer
                .flush(Duration::from_secs(180))
                .expect("every record delivered or failed");
        });
        IdempotentProducer { deliveries, sender }
    }

    pub fn acked(&self) -> u64 {
        self.deliveries.acked.load(Ordering::SeqCst)
    }

    /// Waits for every delivery report; panics on any failed delivery.
    pub fn finish(self) -> u64 {
        let acked = self.deliveries.acked.clone();
        self.sender.join().expect("the sender thread");
        let failures = self.deliveries.failures.lock().expect("failures").clone();
        assert!(
            failures.is_empty(),
            "{} deliveries failed, first: {:?}",
            failures.len(),
            failures.first()
        );
        acked.load(Ordering::SeqCst)
    }
}

/// Every id `0..records` of `topic` is stored once, in its partition
/// (`id % partitions`), in order.
pub fn assert_exactly_once_in_order(bootstrap: &str, topic: &str, partitions: i32, records: u64) {
    let seen = drain_ids(
        bootstrap,
        topic,
        partitions,
        records as usize,
        Duration::from_secs(2),
    );
    for partition in 0..partitions {
        let expected: Vec<u64> = (0..records)
            .filter(|id| id % partitions as u64 == partition as u64)
            .collect();
        let got = seen.get(&partition).cloned().unwrap_or_default();
        if got != expected {
            let mut sorted = got.clone();
            sorted.sort_unstable();
            sorted.dedup();
            let duplicates = got.len() - sorted.len();
            let missing = expected.len().saturating_sub(sorted.len());
            let inversions = got.windows(2).filter(|w| w[1] <= w[0]).count();
            panic!(
                "partition {partition}: {} records stored for {} sent: {duplicates} duplicate(s), \
                 {missing} missing, {inversions} out of order",
                got.len(),
                expected.len()
            );
        }
    }
}
