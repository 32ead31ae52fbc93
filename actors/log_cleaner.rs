//! The log cleaner: compacts the logs whose `cleanup.policy` includes
//! `compact`, as Kafka's `LogCleaner` does. Each pass asks the log shards
//! for their dirtiest cleanable log (`TakeCleanable`: dirty ratio at least
//! `min.cleanable.dirty.ratio`, or `max.compaction.lag.ms` passed), cleans it
//! on a blocking thread (`storage::cleaner::clean`, at most
//! `log.cleaner.threads` at once), then asks the partition's shard to swap
//! the cleaned segments in (`SwapCleaned`). With nothing to clean it waits
//! `log.cleaner.backoff.ms`. Its settings are read from the broker's
//! current config at each pass, so dynamic changes (KIP-226) apply to the
//! next pass and the next cleaning.
//!
//! It owns no log and no file: it never writes to a live segment, never
//! holds a shard thread for longer than a swap (renames and fsyncs), and a
//! cleaning it loses (a panic, a restart) leaves only `.cleaned` files,
//! which the swap discards or the next load removes.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;

use crate::actors::log_manager::{LogShards, SwapCleaned, TakeCleanable};
use crate::actors::supervisor::{supervise, ChildSpec, Escalation, SupervisorLink};
use crate::config::dynamic::DynamicBrokerConfig;
use crate::config::BrokerConfig;
use crate::storage::cleaner::{clean, CleanOutcome, CleanTask, Cleanable, CleanerLimits};
use crate::topic_partition::TopicPartition;

/// How the cleaner runs (`log.cleaner.*`).
#[derive(Debug, Clone)]
pub struct LogCleanerConfig {
    pub threads: usize,
    pub backoff: Duration,
    /// Per cleaning: the dedupe buffer is shared out between the threads.
    pub limits: CleanerLimits,
}

impl LogCleanerConfig {
    pub fn from_broker(config: &BrokerConfig) -> Self {
        let threads = config.log_cleaner_threads.max(1);
        LogCleanerConfig {
            threads,
            backoff: Duration::from_millis(config.log_cleaner_backoff_ms.max(1)),
            limits: CleanerLimits {
                dedupe_buffer_bytes: config.log_cleaner_dedupe_buffer_size / threads as u64,
                load_factor: config.log_cleaner_io_buffer_load_factor,
                io_buffer_bytes: (config.log_cleaner_io_buffer_size as usize).max(4096),
                max_bytes_per_second: config.log_cleaner_io_max_bytes_per_second,
            },
        }
    }
}

pub struct LogCleaner {
    broker_config: DynamicBrokerConfig,
    shards: LogShards,
    /// Logs being cleaned now; never handed out twice.
    cleaning: HashSet<TopicPartition>,
    /// A pass is asking the shards already.
    choosing: bool,
    link: SupervisorLink,
}

impl LogCleaner {
    /// Start the cleaner, supervised: a panic restarts it (cleanings in
    /// flight finish on their threads and their swaps still land).
    pub fn start(broker_config: DynamicBrokerConfig, shards: LogShards) -> Addr<LogCleaner> {
        let link = SupervisorLink::default();
        let child_link = link.clone();
        supervise(
            None,
            // Only its own timer and the cleanings' reports write to it.
            ChildSpec::new("the log cleaner", Escalation::Degrade).with_mailbox(64),
            link,
            move |_| LogCleaner {
                broker_config: broker_config.clone(),
                shards,
                cleaning: HashSet::new(),
                choosing: false,
                link: child_link,
            },
        )
    }

    /// `log.cleaner.*` as they are now.
    fn config(&self) -> LogCleanerConfig {
        LogCleanerConfig::from_broker(&self.broker_config.current())
    }

    /// A pass every `log.cleaner.backoff.ms`, read again each time.
    fn schedule(&self, ctx: &mut Context<Self>) {
        ctx.run_later(self.config().backoff, |actor, ctx| {
            actor.pass(ctx);
            actor.schedule(ctx);
        });
    }

    /// Take the dirtiest log if a cleaner thread is free.
    fn pass(&mut self, ctx: &mut Context<Self>) {
        if self.choosing
            || self.cleaning.len() >= self.config().threads
            || self.link.escalated().is_some()
        {
            return;
        }
        self.choosing = true;
        let exclude: Vec<TopicPartition> = self.cleaning.iter().cloned().collect();
        let candidates = self.shards.gather(move || TakeCleanable {
            exclude: exclude.clone(),
        });
        ctx.spawn(candidates.into_actor(self).map(|answer, actor, ctx| {
            actor.choosing = false;
            let candidates = match answer {
                Ok(candidates) => candidates,
                Err(e) => {
                    log::warn!("log cleaner: cannot list cleanable logs: {e}");
                    return;
                }
            };
            let best = candidates
                .into_iter()
                .max_by(|(a, _), (b, _)| a.priority(b));
            if let Some((cleanable, task)) = best {
                actor.start_cleaning(cleanable, task, ctx);
                // Another thread may be free for the next dirtiest.
                actor.pass(ctx);
            }
        }));
    }

    fn start_cleaning(&mut self, cleanable: Cleanable, task: CleanTask, ctx: &mut Context<Self>) {
        let tp = task.tp.clone();
        self.cleaning.insert(tp.clone());
        let limits = self.config().limits;
        let shard = self.shards.for_partition(&tp);
        log::debug!(
            "log cleaner: cleaning {tp} (dirty ratio {:.2}{})",
            cleanable.dirty_ratio,
            if cleanable.must_clean {
                ", max.compaction.lag.ms passed"
            } else {
                ""
            }
        );
        let work = async move {
            let started = Instant::now();
            let cleaned = tokio::task::spawn_blocking(move || {
                let outcome = clean(&task, &limits);
                (task.first_dirty_offset, outcome)
            })
            .await;
            let (from, outcome) = match cleaned {
                Ok((from, Ok(outcome))) => (from, outcome),
                Ok((_, Err(e))) => return Err(format!("cleaning failed: {e}")),
                Err(e) => return Err(format!("the cleaning thread died: {e}")),
            };
            fail::fail_point!("cleaner.cleaned", |_| { crate::crash_for_test() });
            let outcome = Arc::new(outcome);
            let swapped = shard
                .send(SwapCleaned {
                    tp: outcome.tp.clone(),
                    outcome: outcome.clone(),
                })
                .await
                .map_err(|e| format!("swapping the cleaned segments in failed: {e}"))?;
            Ok((from, outcome, swapped, started.elapsed()))
        };
        ctx.spawn(work.into_actor(self).map(move |result, actor, ctx| {
            actor.cleaning.remove(&tp);
            match result {
                Ok((from, outcome, swapped, elapsed)) => report(from, &outcome, swapped, elapsed),
                Err(reason) => log::warn!("log cleaner: {tp}: {reason}"),
            }
            actor.pass(ctx);
        }));
    }
}

/// Kafka's summary line for one cleaning.
fn report(from: i64, outcome: &CleanOutcome, swapped: usize, elapsed: Duration) {
    let stats = &outcome.stats;
    let seconds = elapsed.as_secs_f64().max(1e-6);
    let megabytes = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    log::info!(
        "log cleaner: cleaned {} (dirty section [{from}, {})): {:.1} MB read, {:.1} MB written in {:.3} s ({:.1} MB/s); {} of {} records kept, {} tombstones removed, {} keys; {swapped} of {} segment(s) swapped in",
        outcome.tp,
        outcome.first_dirty_offset,
        megabytes(stats.bytes_read),
        megabytes(stats.bytes_written),
        seconds,
        megabytes(stats.bytes_read) / seconds,
        stats.records_kept,
        stats.records_read,
        stats.tombstones_removed,
        stats.keys_mapped,
        outcome.cleaned.len(),
    );
}

impl Actor for LogCleaner {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.schedule(ctx);
        self.pass(ctx);
    }
}

impl actix::Supervised for LogCleaner {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        if let Some(cause) = self.link.escalated() {
            log::error!("the log cleaner keeps failing ({cause}); compaction stops until restart");
        }
        // Cleanings in flight were dropped with the old context.
        self.cleaning.clear();
        self.choosing = false;
    }
}
