//! Who leads each partition when no broker died: ElectLeaders on an
//! operator's demand (preferred or unclean), the automatic preferred-leader
//! rebalance, and controlled shutdown (a stopping broker's leaderships
//! moved away before it goes).
//!
//! Only the active controller decides. Every change bumps the leader
//! epoch, is written conditionally on the state znode's version, and is
//! sent to the brokers. A broker in a controlled shutdown is never made a
//! leader here.

use std::collections::BTreeMap;

use actix::prelude::*;
use kafka_protocol::messages::stop_replica_request::{
    StopReplicaPartitionState, StopReplicaTopicState,
};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;

use super::{partition_metadata, Controller, ControllerError, Shared};
use crate::actors::controller_channel::ControlRequest;
use crate::cluster::{PartitionMetadata, TopicMetadata};
pub use crate::controller::election::ElectionType;
use crate::controller::election::{
    elect_leader_candidate, elect_leader_on_state, partitions_to_rebalance,
};
use crate::topic_partition::TopicPartition;

controller_request!(
    /// Elect leaders for `partitions` (all when `None`): each answer is
    /// the partition and its error code (0: elected).
    ElectLeaders {
        election: ElectionType,
        partitions: Option<Vec<TopicPartition>>,
    } -> Vec<(TopicPartition, i16)>, elect_leaders
);

impl Shared {
    /// Kafka's ElectLeaders: preferred (the first replica, if live and in
    /// the ISR) or unclean (any live replica, with a loud log line: the
    /// records only the old leader had are gone). Only the controller
    /// elects; each elected partition gets a new leader epoch and the
    /// brokers are told.
    async fn elect_leaders(
        &self,
        request: ElectLeaders,
    ) -> Result<Vec<(TopicPartition, i16)>, ControllerError> {
        use kafka_protocol::error::ResponseError as E;
        if !self.is_active() {
            return Err(ControllerError::NotController);
        }
        let wanted: Vec<TopicPartition> = match request.partitions {
            Some(partitions) => partitions,
            None => self.context(|c| {
                c.topics()
                    .flat_map(|t| {
                        t.partitions
                            .keys()
                            .map(|&p| TopicPartition::new(t.name.clone(), p))
                    })
                    .collect()
            }),
        };
        // New leaders come from `live`: registered and not shutting down.
        let registered = self.live_brokers();
        let shutting_down = self.shutting_down();
        let live: Vec<i32> = registered
            .iter()
            .copied()
            .filter(|b| !shutting_down.contains(b))
            .collect();
        let mut answers = Vec::with_capacity(wanted.len());
        let mut changed: BTreeMap<String, TopicMetadata> = BTreeMap::new();
        // Per topic, the partitions elected.
        let mut elected: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for tp in wanted {
            let Some(mut topic) = changed
                .get(&tp.topic)
                .cloned()
                .or_else(|| self.topic(&tp.topic))
            else {
                answers.push((tp, E::UnknownTopicOrPartition.code()));
                continue;
            };
            let Some(partition) = topic.partitions.get(&tp.partition).cloned() else {
                answers.push((tp, E::UnknownTopicOrPartition.code()));
                continue;
            };
            let candidate =
                elect_leader_candidate(request.election, &partition, &registered, &live);
            let leader = match candidate {
                Ok(leader) => leader,
                Err(e) => {
                    answers.push((tp, e.code()));
                    continue;
                }
            };
            // Decided again on the state read fresh: the cached version may
            // trail a leader's ISR write.
            let election = request.election;
            let epoch = self.controller_epoch();
            let decided = self
                .rewrite_state(&tp, |state| {
                    elect_leader_on_state(election, leader, state, &registered, epoch)
                })
                .await?;
            let Some((state, version)) = decided else {
                answers.push((tp, E::UnknownTopicOrPartition.code()));
                continue;
            };
            if state.leader != leader {
                let refused = match election {
                    ElectionType::Preferred => E::PreferredLeaderNotAvailable,
                    ElectionType::Unclean => E::EligibleLeadersNotAvailable,
                };
                answers.push((tp, refused.code()));
                continue;
            }
            if election == ElectionType::Unclean {
                log::warn!(
                    "unclean election: partition {tp} gets leader {leader}, which may lack records \
                     its old leader {} had acknowledged",
                    partition.leader
                );
            }
            topic.partitions.insert(
                tp.partition,
                partition_metadata(&state, &partition.replicas, version),
            );
            changed.insert(tp.topic.clone(), topic);
            elected
                .entry(tp.topic.clone())
                .or_default()
                .push(tp.partition);
            answers.push((tp, 0));
            // Killed here, one new leader is written and none is told.
            fail::fail_point!("controller.elect_leaders.one_written", |_| {
                crate::crash_for_test()
            });
        }
        let mut sent = Vec::with_capacity(changed.len());
        for (name, topic) in changed {
            let indexes = elected.remove(&name).unwrap_or_default();
            self.take_up_moves(topic, &indexes, &mut sent).await?;
        }
        self.propagate(&sent).await?;
        Ok(answers)
    }
}

controller_request!(
    /// Kafka's ControlledShutdown at the controller: `broker_id` is about
    /// to stop. Each replicated partition it leads gets another live
    /// in-sync leader, it leaves every ISR, and it stops its replicas
    /// (keeping their logs) so no leader takes it back. Answers the
    /// replicated partitions it still leads (no other in-sync replica is
    /// live): the broker retries, or stops anyway.
    ControlledShutdown {
        broker_id: i32,
        broker_epoch: i64,
    } -> Vec<TopicPartition>, controlled_shutdown
);

controller_request!(
    /// The automatic preferred-leader rebalance's periodic check
    /// (`auto.leader.rebalance.enable`); answers how many partitions moved.
    RebalanceLeaders {} -> usize, rebalance_leaders
);

impl Shared {
    async fn controlled_shutdown(
        &self,
        request: ControlledShutdown,
    ) -> Result<Vec<TopicPartition>, ControllerError> {
        let id = request.broker_id;
        if !self.is_active() {
            return Err(ControllerError::NotController);
        }
        if !self.context(|c| c.is_live(id)) {
            return Err(ControllerError::BrokerNotAvailable(id));
        }
        let current = self.broker_epoch_of(id);
        // v0 and v1 carry no epoch (-1): nothing to check.
        if request.broker_epoch != -1 && request.broker_epoch < current {
            return Err(ControllerError::StaleBrokerEpoch {
                broker: id,
                requested: request.broker_epoch,
                current,
            });
        }
        self.update_context(|c| c.begin_shutdown(id));
        let live = self.live_brokers();
        let shutting_down = self.shutting_down();
        let eligible = |b: i32| live.contains(&b) && !shutting_down.contains(&b);
        let topics = self.all_topics();
        let acted_on = |p: &PartitionMetadata| {
            p.replicas.len() >= 2 && p.replicas.contains(&id) && p.leader >= 0
        };
        // Kafka's order: the replicas it follows stop before it leaves
        // their ISRs. Still fetching, it would catch up again and a leader
        // would take it back into the ISR it is leaving; acks=all would
        // then wait on a broker about to stop.
        let mut followed: BTreeMap<String, Vec<StopReplicaPartitionState>> = BTreeMap::new();
        for topic in &topics {
            for (&index, p) in &topic.partitions {
                if acted_on(p) && p.leader != id {
                    followed
                        .entry(topic.name.clone())
                        .or_default()
                        .push(keeping_the_log(index, p.leader_epoch));
                }
            }
        }
        self.stop_replicas_at(id, &followed).await?;
        let mut changed = Vec::new();
        let mut stopped: BTreeMap<String, Vec<StopReplicaPartitionState>> = BTreeMap::new();
        let mut remaining = Vec::new();
        for mut topic in topics {
            // Which partitions it acts on, and led, before the writes.
            let acting: Vec<(i32, bool)> = topic
                .partitions
                .iter()
                .filter(|(_, p)| acted_on(p))
                .map(|(&index, p)| (index, p.leader == id))
                .collect();
            let moved = self
                .rewrite_partitions(
                    &mut topic,
                    |_, p| acted_on(p),
                    |tp, p| async move { self.leave(&tp, id, &p, eligible).await },
                )
                .await?;
            if !moved.is_empty() {
                fail::fail_point!("controller.controlled_shutdown.one_moved", |_| {
                    crate::crash_for_test()
                });
            }
            for (index, led) in acting {
                let Some(p) = topic.partitions.get(&index) else {
                    continue;
                };
                if p.leader == id {
                    remaining.push(TopicPartition::new(topic.name.clone(), index));
                } else if led {
                    stopped
                        .entry(topic.name.clone())
                        .or_default()
                        .push(keeping_the_log(index, p.leader_epoch));
                }
            }
            if !moved.is_empty() {
                self.remember(topic.clone());
                if id != self.broker_id {
                    self.become_leader_or_follower(&topic, &moved).await?;
                }
                changed.push(topic.only(&moved));
            }
        }
        log::info!(
            "controlled shutdown of broker {id}: {} partition(s) changed, {} replica(s) stopped \
             there, {} replicated partition(s) still led there",
            changed.iter().map(|t| t.partitions.len()).sum::<usize>(),
            followed
                .values()
                .chain(stopped.values())
                .map(Vec::len)
                .sum::<usize>(),
            remaining.len()
        );
        // The replicas it led stop once their new leaders are written.
        self.stop_replicas_at(id, &stopped).await?;
        self.publish_locally(&changed).await?;
        for broker in self.remote_brokers() {
            if broker != id {
                self.send_topics_to(broker, &changed);
            } else {
                let request = self.update_metadata_request(broker, &changed);
                self.deliver(broker, vec![ControlRequest::UpdateMetadata(request)]);
            }
        }
        Ok(remaining)
    }

    /// StopReplica (logs kept) of `partitions` at `broker`: this broker's
    /// own replicas at once, another's through its channel.
    async fn stop_replicas_at(
        &self,
        broker: i32,
        partitions: &BTreeMap<String, Vec<StopReplicaPartitionState>>,
    ) -> Result<(), ControllerError> {
        if partitions.is_empty() {
            return Ok(());
        }
        if broker == self.broker_id {
            let local = partitions
                .iter()
                .flat_map(|(name, states)| {
                    states
                        .iter()
                        .map(|p| TopicPartition::new(name.clone(), p.partition_index))
                })
                .collect();
            self.stop_local_replicas(local, false).await?;
            return Ok(());
        }
        let topics = partitions
            .iter()
            .map(|(name, states)| {
                StopReplicaTopicState::default()
                    .with_topic_name(TopicName(StrBytes::from_string(name.clone())))
                    .with_partition_states(states.clone())
            })
            .collect();
        let request = self.stop_replica_request(broker, topics);
        self.deliver(broker, vec![ControlRequest::StopReplica(request)]);
        Ok(())
    }

    /// Kafka's `checkAndTriggerAutoLeaderRebalance`: partitions go back to
    /// their preferred replica where a broker's share of lost leaderships
    /// is above `leader.imbalance.per.broker.percentage`.
    async fn rebalance_leaders(
        &self,
        _request: RebalanceLeaders,
    ) -> Result<usize, ControllerError> {
        if !self.is_active() || !self.config.auto_leader_rebalance_enable {
            return Ok(0);
        }
        let live = self.live_brokers();
        let shutting_down = self.shutting_down();
        let topics = self.all_topics();
        let wanted = partitions_to_rebalance(
            &topics,
            |b| live.contains(&b) && !shutting_down.contains(&b),
            self.config.leader_imbalance_per_broker_percentage,
        );
        if wanted.is_empty() {
            return Ok(0);
        }
        let answers = self
            .elect_leaders(ElectLeaders {
                election: ElectionType::Preferred,
                partitions: Some(wanted),
            })
            .await?;
        let moved = answers.iter().filter(|(_, code)| *code == 0).count();
        if moved > 0 {
            log::info!(
                "leader rebalance: {moved} partition(s) led by their preferred replica again"
            );
        }
        Ok(moved)
    }
}

/// A StopReplica partition that keeps its log (a controlled shutdown).
fn keeping_the_log(index: i32, leader_epoch: i32) -> StopReplicaPartitionState {
    StopReplicaPartitionState::default()
        .with_partition_index(index)
        .with_leader_epoch(leader_epoch)
        .with_delete_partition(false)
}
