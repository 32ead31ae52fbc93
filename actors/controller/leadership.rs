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

use super::{partition_metadata, Controller, Shared, TopicError};
use crate::actors::controller_channel::ControlRequest;
use crate::cluster::TopicMetadata;
use crate::metadata::znodes::LeaderAndIsr;
use crate::topic_partition::TopicPartition;

/// Which leader an ElectLeaders request asks for (KIP-460).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionType {
    /// The first replica, when it is live and in sync.
    Preferred,
    /// Any live replica, in sync or not (records may be lost).
    Unclean,
}

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
    ) -> Result<Vec<(TopicPartition, i16)>, TopicError> {
        use kafka_protocol::error::ResponseError as E;
        if !self.is_active() {
            return Err(TopicError::NotController);
        }
        let wanted: Vec<TopicPartition> = match request.partitions {
            Some(partitions) => partitions,
            None => self.cache.read(|m| {
                m.topics
                    .values()
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
        for tp in wanted {
            let Some(mut topic) = changed
                .get(&tp.topic)
                .cloned()
                .or_else(|| self.cache.topic(&tp.topic))
            else {
                answers.push((tp, E::UnknownTopicOrPartition.code()));
                continue;
            };
            let Some(partition) = topic.partitions.get(&tp.partition).cloned() else {
                answers.push((tp, E::UnknownTopicOrPartition.code()));
                continue;
            };
            let candidate = match request.election {
                ElectionType::Preferred => {
                    let preferred = partition.replicas.first().copied();
                    match preferred {
                        Some(p) if p == partition.leader => Err(E::ElectionNotNeeded),
                        Some(p) if live.contains(&p) && partition.isr.contains(&p) => Ok(p),
                        _ => Err(E::PreferredLeaderNotAvailable),
                    }
                }
                ElectionType::Unclean => {
                    if registered.contains(&partition.leader) {
                        Err(E::ElectionNotNeeded)
                    } else {
                        partition
                            .replicas
                            .iter()
                            .copied()
                            .find(|r| live.contains(r))
                            .ok_or(E::EligibleLeadersNotAvailable)
                    }
                }
            };
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
                    let allowed = match election {
                        ElectionType::Preferred => state.isr.contains(&leader),
                        ElectionType::Unclean => !registered.contains(&state.leader),
                    };
                    (state.leader != leader && allowed).then(|| LeaderAndIsr {
                        leader,
                        leader_epoch: state.leader_epoch + 1,
                        isr: if state.isr.contains(&leader) {
                            state.isr.clone()
                        } else {
                            vec![leader]
                        },
                        controller_epoch: epoch,
                    })
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
            answers.push((tp, 0));
        }
        let changed: Vec<TopicMetadata> = changed.into_values().collect();
        for topic in &changed {
            self.cache
                .update(|m| m.topics.insert(topic.name.clone(), topic.clone()));
            let indexes: Vec<i32> = topic.partitions.keys().copied().collect();
            self.apply_local(topic, &indexes, &BTreeMap::new()).await?;
        }
        self.propagate(&changed);
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
    ) -> Result<Vec<TopicPartition>, TopicError> {
        let id = request.broker_id;
        if !self.is_active() {
            return Err(TopicError::NotController);
        }
        if !self.live_brokers().contains(&id) {
            return Err(TopicError::BrokerNotAvailable(id));
        }
        let current = if id == self.broker_id {
            self.role().broker_epoch
        } else {
            self.broker_epoch_of(id)
        };
        // v0 and v1 carry no epoch (-1): nothing to check.
        if request.broker_epoch != -1 && request.broker_epoch < current {
            return Err(TopicError::StaleBrokerEpoch {
                broker: id,
                requested: request.broker_epoch,
                current,
            });
        }
        self.update_shutting_down(|ids| {
            ids.insert(id);
        });
        let live = self.live_brokers();
        let shutting_down = self.shutting_down();
        let eligible = |b: i32| live.contains(&b) && !shutting_down.contains(&b);
        let topics: Vec<TopicMetadata> = self.cache.read(|m| m.topics.values().cloned().collect());
        let mut changed = Vec::new();
        let mut stopped: BTreeMap<String, Vec<StopReplicaPartitionState>> = BTreeMap::new();
        let mut remaining = Vec::new();
        for mut topic in topics {
            let mut moved = Vec::new();
            for (&index, p) in topic.partitions.iter_mut() {
                if p.replicas.len() < 2 || !p.replicas.contains(&id) || p.leader < 0 {
                    continue;
                }
                let tp = TopicPartition::new(topic.name.clone(), index);
                let replicas = p.replicas.clone();
                let epoch = self.controller_epoch();
                let Some((state, version)) = self
                    .rewrite_state(&tp, |state| {
                        leave_partition(state, id, &replicas, eligible, epoch)
                    })
                    .await?
                else {
                    continue;
                };
                let updated = partition_metadata(&state, &replicas, version);
                if updated != *p {
                    *p = updated;
                    moved.push(index);
                }
                if p.leader == id {
                    remaining.push(tp);
                } else {
                    stopped.entry(topic.name.clone()).or_default().push(
                        StopReplicaPartitionState::default()
                            .with_partition_index(index)
                            .with_leader_epoch(p.leader_epoch)
                            .with_delete_partition(false),
                    );
                }
            }
            if !moved.is_empty() {
                self.cache
                    .update(|m| m.topics.insert(topic.name.clone(), topic.clone()));
                if id != self.broker_id {
                    self.apply_local(&topic, &moved, &BTreeMap::new()).await?;
                }
                changed.push(topic);
            }
        }
        log::info!(
            "controlled shutdown of broker {id}: {} partition(s) changed, {} replica(s) stopped \
             there, {} replicated partition(s) still led there",
            changed.iter().map(|t| t.partitions.len()).sum::<usize>(),
            stopped.values().map(Vec::len).sum::<usize>(),
            remaining.len()
        );
        if id == self.broker_id {
            for (name, partitions) in &stopped {
                for p in partitions {
                    self.stop_leading(&TopicPartition::new(name.clone(), p.partition_index));
                }
            }
        }
        for broker in self.remote_brokers() {
            if broker != id {
                self.send_topics_to(broker, &changed);
                continue;
            }
            let mut requests = Vec::new();
            if !stopped.is_empty() {
                let topics = stopped
                    .iter()
                    .map(|(name, partitions)| {
                        StopReplicaTopicState::default()
                            .with_topic_name(TopicName(StrBytes::from_string(name.clone())))
                            .with_partition_states(partitions.clone())
                    })
                    .collect();
                requests.push(ControlRequest::StopReplica(
                    self.stop_replica_request(broker, topics),
                ));
            }
            requests.push(ControlRequest::UpdateMetadata(
                self.update_metadata_request(broker, &changed),
            ));
            self.deliver(broker, requests);
        }
        Ok(remaining)
    }

    /// Kafka's `checkAndTriggerAutoLeaderRebalance`: partitions go back to
    /// their preferred replica where a broker's share of lost leaderships
    /// is above `leader.imbalance.per.broker.percentage`.
    async fn rebalance_leaders(&self, _request: RebalanceLeaders) -> Result<usize, TopicError> {
        if !self.is_active() || !self.config.auto_leader_rebalance_enable {
            return Ok(0);
        }
        let live = self.live_brokers();
        let shutting_down = self.shutting_down();
        let topics: Vec<TopicMetadata> = self.cache.read(|m| m.topics.values().cloned().collect());
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

/// A partition's state once `broker` leaves it in a controlled shutdown
/// (Kafka's `ControlledShutdownPartitionLeaderElectionStrategy`): if it
/// leads, the first other in-sync replica that is `eligible` leads instead
/// (none: nothing changes, it keeps leading); it leaves the ISR unless it
/// is the last member. `None`: nothing changes.
fn leave_partition(
    state: &LeaderAndIsr,
    broker: i32,
    replicas: &[i32],
    eligible: impl Fn(i32) -> bool,
    controller_epoch: i32,
) -> Option<LeaderAndIsr> {
    let isr: Vec<i32> = state.isr.iter().copied().filter(|&b| b != broker).collect();
    let next = |leader: i32, isr: Vec<i32>| LeaderAndIsr {
        leader,
        leader_epoch: state.leader_epoch + 1,
        isr,
        controller_epoch,
    };
    if state.leader == broker {
        let leader = replicas
            .iter()
            .copied()
            .find(|&r| r != broker && isr.contains(&r) && eligible(r))?;
        return Some(next(leader, isr));
    }
    (state.isr.contains(&broker) && !isr.is_empty()).then(|| next(state.leader, isr))
}

/// The partitions the automatic rebalance gives back to their preferred
/// (first) replica: for each broker whose preferred partitions are led
/// elsewhere in more than `percentage` % of cases, those it may lead now
/// (it is `eligible` and in the ISR).
fn partitions_to_rebalance(
    topics: &[TopicMetadata],
    eligible: impl Fn(i32) -> bool,
    percentage: u32,
) -> Vec<TopicPartition> {
    // Per preferred replica: its partitions, and those led by another broker
    // (with whether the preferred replica is in their ISR).
    let mut by_preferred: BTreeMap<i32, (usize, Vec<(TopicPartition, bool)>)> = BTreeMap::new();
    for topic in topics {
        for (&index, p) in &topic.partitions {
            let Some(&preferred) = p.replicas.first() else {
                continue;
            };
            let (count, elsewhere) = by_preferred.entry(preferred).or_default();
            *count += 1;
            // Offline (-1) and deleted partitions are not the rebalance's.
            if p.leader >= 0 && p.leader != preferred {
                let in_sync = p.isr.contains(&preferred);
                elsewhere.push((TopicPartition::new(topic.name.clone(), index), in_sync));
            }
        }
    }
    let mut wanted = Vec::new();
    for (preferred, (count, elsewhere)) in by_preferred {
        let ratio = elsewhere.len() as f64 / count as f64;
        if ratio <= f64::from(percentage) / 100.0 || !eligible(preferred) {
            continue;
        }
        log::info!(
            "leader imbalance of broker {preferred}: {} of its {count} preferred partition(s) \
             are led elsewhere",
            elsewhere.len()
        );
        wanted.extend(
            elsewhere
                .into_iter()
                .filter_map(|(tp, in_sync)| in_sync.then_some(tp)),
        );
    }
    wanted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::PartitionMetadata;
    use crate::storage::LogConfig;

    fn state(leader: i32, isr: &[i32]) -> LeaderAndIsr {
        LeaderAndIsr {
            leader,
            leader_epoch: 4,
            isr: isr.to_vec(),
            controller_epoch: 1,
        }
    }

    #[test]
    fn a_stopping_leader_hands_over_to_the_first_eligible_in_sync_replica() {
        let all = |_: i32| true;
        let next = leave_partition(&state(1, &[1, 2, 3]), 1, &[1, 2, 3], all, 2);
        assert_eq!(
            next,
            Some(LeaderAndIsr {
                leader: 2,
                leader_epoch: 5,
                isr: vec![2, 3],
                controller_epoch: 2
            })
        );
        // Broker 2 is stopping too: 3 leads.
        let next = leave_partition(&state(1, &[1, 2, 3]), 1, &[1, 2, 3], |b| b != 2, 2);
        assert_eq!(next.map(|s| (s.leader, s.isr)), Some((3, vec![2, 3])));
        // No other in-sync replica: it keeps leading, nothing changes.
        assert_eq!(
            leave_partition(&state(1, &[1]), 1, &[1, 2, 3], all, 2),
            None
        );
        assert_eq!(
            leave_partition(&state(1, &[1, 2]), 1, &[1, 2, 3], |b| b != 2, 2),
            None
        );
    }

    #[test]
    fn a_stopping_follower_leaves_the_isr_unless_it_is_the_last() {
        let all = |_: i32| true;
        let next = leave_partition(&state(2, &[1, 2, 3]), 3, &[1, 2, 3], all, 2);
        assert_eq!(
            next.map(|s| (s.leader, s.leader_epoch, s.isr)),
            Some((2, 5, vec![1, 2]))
        );
        assert_eq!(
            leave_partition(&state(2, &[2]), 3, &[1, 2, 3], all, 2),
            None
        );
    }

    fn topic(name: &str, partitions: &[(i32, &[i32], &[i32])]) -> TopicMetadata {
        TopicMetadata {
            name: name.into(),
            topic_id: [0; 16],
            is_internal: false,
            partitions: partitions
                .iter()
                .enumerate()
                .map(|(index, (leader, replicas, isr))| {
                    (
                        index as i32,
                        PartitionMetadata {
                            leader: *leader,
                            leader_epoch: 0,
                            replicas: replicas.to_vec(),
                            isr: isr.to_vec(),
                            zk_version: 0,
                        },
                    )
                })
                .collect(),
            configs: BTreeMap::new(),
            log_config: LogConfig::default(),
        }
    }

    #[test]
    fn the_rebalance_moves_partitions_of_brokers_above_the_imbalance_ratio() {
        // Broker 1 prefers 4 partitions and leads 3 of them (25 % lost);
        // broker 2 prefers 2 and leads both.
        let topics = vec![topic(
            "t",
            &[
                (1, &[1, 2], &[1, 2]),
                (1, &[1, 2], &[1, 2]),
                (1, &[1, 2], &[1, 2]),
                (2, &[1, 2], &[1, 2]),
                (2, &[2, 1], &[2, 1]),
                (2, &[2, 1], &[2, 1]),
            ],
        )];
        let all = |_: i32| true;
        assert_eq!(
            partitions_to_rebalance(&topics, all, 10),
            vec![TopicPartition::new("t", 3)]
        );
        assert!(partitions_to_rebalance(&topics, all, 25).is_empty());
        assert!(
            partitions_to_rebalance(&topics, |b| b != 1, 10).is_empty(),
            "the preferred replica cannot lead now"
        );
        let out_of_sync = vec![topic("t", &[(2, &[1, 2], &[2])])];
        assert!(partitions_to_rebalance(&out_of_sync, all, 10).is_empty());
        let offline = vec![topic("t", &[(-1, &[1, 2], &[1])])];
        assert!(partitions_to_rebalance(&offline, all, 10).is_empty());
    }
}
