//! A replica fetcher (Kafka's `ReplicaFetcherThread`): one actor per
//! (leader broker, fetcher id), `num.replica.fetchers` of them per leader,
//! each copying the partitions it was given from that leader into their
//! follower partition actors.
//!
//! For each partition it first finds where its log diverges from the
//! leader's (OffsetForLeaderEpoch with its latest leader epoch, KIP-279,
//! round after round until both name the same epoch) and truncates there,
//! never blindly to its high watermark; then it fetches in a loop with
//! Kafka's Fetch and `replica_id` set, honouring `replica.fetch.max.bytes`,
//! `replica.fetch.response.max.bytes`, `replica.fetch.wait.max.ms`,
//! `replica.fetch.min.bytes` and `replica.fetch.backoff.ms`, and appends
//! what it gets through the partition actor (which persists through the
//! shared log manager).
//!
//! It never decides who leads: partitions come and go with the controller's
//! LeaderAndIsr (`ReplicaFetchers::follow`/`unfollow`), and an answer from
//! the leader saying it no longer leads only pauses the partition.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use tokio::time::Instant;

use crate::net::client::BrokerClient;
use crate::topic_partition::TopicPartition;

use super::log_manager::LogOffsets;
use super::partition::PartitionHandle;
use super::supervisor::{supervise, ChildSpec, Escalation, SupervisorLink};

mod round;
use round::{run_round, Outcome, LEADER_CATCH_UP_BACKOFF};

/// The Fetch version followers speak (Kafka 3.x's last before topic ids).
pub const REPLICA_FETCH_VERSION: i16 = 12;
pub const OFFSET_FOR_LEADER_EPOCH_VERSION: i16 = 4;
/// ListOffsets v4 carries `current_leader_epoch`.
pub const LIST_OFFSETS_VERSION: i16 = 4;

/// The replica fetch settings, from the broker config.
#[derive(Debug, Clone)]
pub struct ReplicaFetcherConfig {
    pub broker_id: i32,
    pub num_fetchers: usize,
    pub fetch_max_bytes: i32,
    pub response_max_bytes: i32,
    pub wait_max_ms: i32,
    pub min_bytes: i32,
    pub backoff: Duration,
    /// How this broker reaches the leaders (TLS, SASL).
    pub security: std::sync::Arc<crate::net::inter_broker::InterBrokerSecurity>,
    /// Where each followed partition's lag is kept (Kafka's
    /// ReplicaFetcherManager MaxLag).
    pub lag: crate::metrics::FetcherLag,
}

impl ReplicaFetcherConfig {
    pub fn from_broker(
        config: &crate::config::BrokerConfig,
        security: std::sync::Arc<crate::net::inter_broker::InterBrokerSecurity>,
        lag: crate::metrics::FetcherLag,
    ) -> ReplicaFetcherConfig {
        ReplicaFetcherConfig {
            lag,
            broker_id: config.broker_id,
            num_fetchers: config.num_replica_fetchers.max(1),
            fetch_max_bytes: clamp_i32(config.replica_fetch_max_bytes),
            response_max_bytes: clamp_i32(config.replica_fetch_response_max_bytes),
            wait_max_ms: clamp_i32(config.replica_fetch_wait_max_ms),
            min_bytes: clamp_i32(config.replica_fetch_min_bytes),
            backoff: Duration::from_millis(config.replica_fetch_backoff_ms),
            security,
        }
    }
}

fn clamp_i32(value: u64) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FetchState {
    /// Find the divergence point with the leader first.
    Truncating,
    Fetching,
}

struct Followed {
    handle: PartitionHandle,
    leader_epoch: i32,
    fetch_offset: i64,
    /// This replica's own log start, sent with each fetch: the leader's
    /// DeleteRecords waits for it (the low watermark).
    log_start_offset: i64,
    state: FetchState,
    /// Not before this instant (after an error).
    paused_until: Option<Instant>,
}

pub struct ReplicaFetcher {
    leader: i32,
    fetcher_id: usize,
    /// The leader's `host:port`.
    address: String,
    config: ReplicaFetcherConfig,
    /// Taken by the round in flight.
    client: Option<BrokerClient>,
    partitions: BTreeMap<TopicPartition, Followed>,
    round: Option<RoundInFlight>,
    link: SupervisorLink,
}

/// The round in flight: its future, and the leader epoch each of its
/// partitions was taken in.
struct RoundInFlight {
    future: SpawnHandle,
    epochs: Vec<(TopicPartition, i32)>,
}

/// What one round works on: a snapshot of the partitions' positions.
struct RoundWork {
    truncate: Vec<(TopicPartition, PartitionHandle, i32)>,
    fetch: Vec<FetchWork>,
}

/// One partition to fetch: where, in which leader epoch, from which offset,
/// and where this replica's log starts.
struct FetchWork {
    tp: TopicPartition,
    handle: PartitionHandle,
    leader_epoch: i32,
    offset: i64,
    log_start_offset: i64,
}

impl ReplicaFetcher {
    fn schedule(&mut self, ctx: &mut Context<Self>) {
        if self.round.is_some() || self.partitions.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut work = RoundWork {
            truncate: Vec::new(),
            fetch: Vec::new(),
        };
        let mut next_wake: Option<Instant> = None;
        for (tp, followed) in &self.partitions {
            if let Some(until) = followed.paused_until.filter(|until| *until > now) {
                next_wake = Some(next_wake.map_or(until, |w| w.min(until)));
                continue;
            }
            match followed.state {
                FetchState::Truncating => {
                    work.truncate
                        .push((tp.clone(), followed.handle.clone(), followed.leader_epoch))
                }
                FetchState::Fetching => work.fetch.push(FetchWork {
                    tp: tp.clone(),
                    handle: followed.handle.clone(),
                    leader_epoch: followed.leader_epoch,
                    offset: followed.fetch_offset,
                    log_start_offset: followed.log_start_offset,
                }),
            }
        }
        if work.truncate.is_empty() && work.fetch.is_empty() {
            if let Some(wake) = next_wake {
                ctx.run_later(wake.saturating_duration_since(now), |actor, ctx| {
                    actor.schedule(ctx)
                });
            }
            return;
        }
        let Some(mut client) = self.client.take() else {
            return;
        };
        let epochs = work
            .truncate
            .iter()
            .map(|(tp, _, epoch)| (tp.clone(), *epoch))
            .chain(work.fetch.iter().map(|f| (f.tp.clone(), f.leader_epoch)))
            .collect();
        let config = self.config.clone();
        let future = ctx.spawn(
            async move {
                let outcomes = run_round(&mut client, &config, work).await;
                (client, outcomes)
            }
            .into_actor(self)
            .map(|(mut client, outcomes), actor, ctx| {
                // The leader may have moved (a restart on a new port) while
                // the round was out.
                client.set_address(actor.address.clone());
                actor.client = Some(client);
                actor.round = None;
                actor.apply(outcomes);
                actor.schedule(ctx);
            }),
        );
        self.round = Some(RoundInFlight { future, epochs });
    }

    /// Gives up the round in flight when nothing it brings back can be
    /// used: each of its partitions has a new leader epoch or is no longer
    /// followed here. Such a round may be waiting on a dead connection (a
    /// leader killed while cut off: its FIN never came, and the follower
    /// learns of it only from a retransmission or its exchange timeout,
    /// measured up to 14 s after the leader's restart); a new connection
    /// serves the new epochs at once.
    fn abandon_stale_round(&mut self, ctx: &mut Context<Self>) {
        let Some(round) = &self.round else {
            return;
        };
        let stale = round.epochs.iter().all(|(tp, epoch)| {
            self.partitions
                .get(tp)
                .is_none_or(|followed| followed.leader_epoch != *epoch)
        });
        if !stale {
            return;
        }
        if let Some(round) = self.round.take() {
            ctx.cancel_future(round.future);
        }
        log::info!(
            "replica fetcher {} for leader {}: every partition of the round in flight moved on; abandoning it on a new connection",
            self.fetcher_id,
            self.leader
        );
        self.client = Some(new_client(
            &self.config,
            self.address.clone(),
            self.fetcher_id,
        ));
    }

    fn apply(&mut self, outcomes: Vec<(TopicPartition, i32, Outcome)>) {
        fail::fail_point!("fetcher.apply");
        let now = Instant::now();
        let backoff_until = now + self.config.backoff;
        let retry_at = now + self.config.backoff.min(LEADER_CATCH_UP_BACKOFF);
        for (tp, leader_epoch, outcome) in outcomes {
            let Some(followed) = self.partitions.get_mut(&tp) else {
                continue;
            };
            // A new LeaderAndIsr came meanwhile: its state wins.
            if followed.leader_epoch != leader_epoch {
                continue;
            }
            match outcome {
                Outcome::FetchFrom(offset, log_start_offset) => {
                    followed.fetch_offset = offset;
                    if let Some(start) = log_start_offset {
                        followed.log_start_offset = start;
                    }
                    followed.state = FetchState::Fetching;
                    followed.paused_until = None;
                }
                Outcome::Backoff => followed.paused_until = Some(backoff_until),
                Outcome::RetrySoon => followed.paused_until = Some(retry_at),
            }
        }
    }
}

impl Actor for ReplicaFetcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        log::info!(
            "replica fetcher {} for leader {} started",
            self.fetcher_id,
            self.leader
        );
        self.schedule(ctx);
    }
}

impl actix::Supervised for ReplicaFetcher {
    fn restarting(&mut self, ctx: &mut Context<Self>) {
        if let Some(cause) = self.link.escalated() {
            log::error!(
                "replica fetcher {} for leader {} keeps failing ({cause}); it fetches on",
                self.fetcher_id,
                self.leader
            );
        }
        // A round lost in the panic gave no client back: make a new one,
        // and find every divergence point again.
        if self.client.is_none() {
            self.client = Some(new_client(
                &self.config,
                self.address.clone(),
                self.fetcher_id,
            ));
        }
        self.round = None;
        for followed in self.partitions.values_mut() {
            followed.state = FetchState::Truncating;
        }
        self.schedule(ctx);
    }
}

fn new_client(config: &ReplicaFetcherConfig, address: String, fetcher_id: usize) -> BrokerClient {
    BrokerClient::new(
        address,
        format!("replica-fetcher-{}-{fetcher_id}", config.broker_id),
        // A parked fetch answers within wait_max_ms; leave room for it.
        Duration::from_millis(config.wait_max_ms.max(0) as u64) + Duration::from_secs(30),
        (config.response_max_bytes.max(0) as usize).saturating_add(1 << 20),
        config.security.clone(),
    )
}

/// Follow `tp` (a new one, or a new leader epoch of one followed).
#[derive(Message)]
#[rtype(result = "()")]
pub struct AddPartition {
    pub tp: TopicPartition,
    pub leader_epoch: i32,
    pub handle: PartitionHandle,
    /// The follower's log as the assignment left it.
    pub offsets: LogOffsets,
    /// The leader's `host:port` now.
    pub address: String,
}

impl Handler<AddPartition> for ReplicaFetcher {
    type Result = ();

    fn handle(&mut self, msg: AddPartition, ctx: &mut Context<Self>) {
        if let Some(client) = self.client.as_mut() {
            client.set_address(msg.address.clone());
        }
        self.address = msg.address;
        self.partitions.insert(
            msg.tp,
            Followed {
                handle: msg.handle,
                leader_epoch: msg.leader_epoch,
                fetch_offset: msg.offsets.log_end_offset,
                log_start_offset: msg.offsets.log_start_offset,
                state: FetchState::Truncating,
                paused_until: None,
            },
        );
        self.abandon_stale_round(ctx);
        self.schedule(ctx);
    }
}

/// Stop following `tp`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RemovePartition {
    pub tp: TopicPartition,
}

impl Handler<RemovePartition> for ReplicaFetcher {
    type Result = ();

    fn handle(&mut self, msg: RemovePartition, ctx: &mut Context<Self>) {
        self.partitions.remove(&msg.tp);
        self.config.lag.forget(&msg.tp);
        self.abandon_stale_round(ctx);
    }
}

/// Stop for good (shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopFetcher;

impl Handler<StopFetcher> for ReplicaFetcher {
    type Result = ();

    fn handle(&mut self, _msg: StopFetcher, ctx: &mut Context<Self>) {
        for tp in self.partitions.keys() {
            self.config.lag.forget(tp);
        }
        self.partitions.clear();
        self.link.stop();
        ctx.stop();
    }
}

/// The fetchers of this broker, by leader: which partitions each follows.
/// The controller calls it when LeaderAndIsr makes this broker a follower
/// or takes it off one.
#[derive(Clone)]
pub struct ReplicaFetchers {
    config: ReplicaFetcherConfig,
    inner: Arc<Mutex<FetcherTable>>,
}

#[derive(Default)]
struct FetcherTable {
    fetchers: HashMap<(i32, usize), Addr<ReplicaFetcher>>,
    following: HashMap<TopicPartition, (i32, usize)>,
}

impl ReplicaFetchers {
    pub fn new(config: ReplicaFetcherConfig) -> ReplicaFetchers {
        ReplicaFetchers {
            config,
            inner: Arc::new(Mutex::new(FetcherTable::default())),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, FetcherTable> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Copy `tp` from `leader` at `address` in `leader_epoch`.
    pub fn follow(
        &self,
        tp: &TopicPartition,
        leader: i32,
        address: String,
        leader_epoch: i32,
        handle: PartitionHandle,
        offsets: LogOffsets,
    ) {
        let fetcher_id = fetcher_for(tp, self.config.num_fetchers);
        let key = (leader, fetcher_id);
        let mut table = self.table();
        if let Some(previous) = table.following.insert(tp.clone(), key) {
            if previous != key {
                if let Some(fetcher) = table.fetchers.get(&previous) {
                    fetcher.do_send(RemovePartition { tp: tp.clone() });
                }
            }
        }
        let fetcher = table
            .fetchers
            .entry(key)
            .or_insert_with(|| self.start_fetcher(leader, fetcher_id, address.clone()))
            .clone();
        drop(table);
        fetcher.do_send(AddPartition {
            tp: tp.clone(),
            leader_epoch,
            handle,
            offsets,
            address,
        });
    }

    /// Stop copying `tp` (this broker leads it now, it is offline, or gone).
    pub fn unfollow(&self, tp: &TopicPartition) {
        let mut table = self.table();
        if let Some(key) = table.following.remove(tp) {
            if let Some(fetcher) = table.fetchers.get(&key) {
                fetcher.do_send(RemovePartition { tp: tp.clone() });
            }
        }
    }

    /// Which leader `tp` is copied from, if any (tests).
    #[cfg(any(test, feature = "internals"))]
    pub fn leader_of(&self, tp: &TopicPartition) -> Option<i32> {
        self.table().following.get(tp).map(|(leader, _)| *leader)
    }

    /// Stop every fetcher (shutdown).
    pub fn stop_all(&self) {
        let mut table = self.table();
        table.following.clear();
        for (_, fetcher) in table.fetchers.drain() {
            fetcher.do_send(StopFetcher);
        }
    }

    fn start_fetcher(
        &self,
        leader: i32,
        fetcher_id: usize,
        address: String,
    ) -> Addr<ReplicaFetcher> {
        let link = SupervisorLink::default();
        let spec = ChildSpec::new(
            format!("replica fetcher {fetcher_id} for leader {leader}"),
            Escalation::Degrade,
        );
        let actor = ReplicaFetcher {
            leader,
            fetcher_id,
            client: Some(new_client(&self.config, address.clone(), fetcher_id)),
            address,
            config: self.config.clone(),
            partitions: BTreeMap::new(),
            round: None,
            link: link.clone(),
        };
        supervise(None, spec, link, move |_| actor)
    }
}

/// Kafka's `getFetcherId`: partitions spread over the fetchers by hash.
fn fetcher_for(tp: &TopicPartition, fetchers: usize) -> usize {
    let hash = crate::group::java_string_hash(&tp.topic)
        .wrapping_mul(31)
        .wrapping_add(tp.partition);
    (hash.unsigned_abs() as usize) % fetchers.max(1)
}
