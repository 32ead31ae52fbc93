//! Kafka's leader election rules (`PartitionLeaderElectionAlgorithms` and
//! the controller's state machines) as pure functions of a partition's
//! state, its replicas and the live brokers. Every new state bumps the
//! leader epoch; `None` means nothing changes. No I/O, no clock.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::error::ResponseError;

use crate::cluster::{PartitionMetadata, TopicMetadata};
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

fn next(state: &LeaderAndIsr, leader: i32, isr: Vec<i32>, controller_epoch: i32) -> LeaderAndIsr {
    LeaderAndIsr {
        leader,
        leader_epoch: state.leader_epoch + 1,
        isr,
        controller_epoch,
    }
}

/// A new partition's first state: the live replicas, in assignment order,
/// are the ISR and the first of them leads (none live: offline).
pub fn initial_state(replicas: &[i32], live: &[i32], controller_epoch: i32) -> LeaderAndIsr {
    let isr: Vec<i32> = replicas
        .iter()
        .copied()
        .filter(|r| live.contains(r))
        .collect();
    LeaderAndIsr {
        leader: isr.first().copied().unwrap_or(LeaderAndIsr::NO_LEADER),
        leader_epoch: 0,
        isr,
        controller_epoch,
    }
}

/// What an election found, for the log line the caller writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elected {
    /// A live in-sync replica leads (or the leader stays and dead ISR
    /// members leave).
    Clean(LeaderAndIsr),
    /// An out-of-sync replica leads: records only the old ISR had are lost.
    Unclean(LeaderAndIsr),
    /// No live in-sync replica: offline, keeping the ISR so its last
    /// member can lead again.
    Offline(LeaderAndIsr),
}

impl Elected {
    pub fn into_state(self) -> LeaderAndIsr {
        match self {
            Elected::Clean(s) | Elected::Unclean(s) | Elected::Offline(s) => s,
        }
    }
}

/// Kafka's `offlinePartitionLeaderElection` after brokers come or go: a
/// live leader keeps leading while dead brokers leave the ISR (never
/// emptying it); a dead leader is replaced by the first replica in
/// assignment order that is live, in the ISR and not shutting down; with
/// none, `unclean` lets the first eligible replica lead with an ISR of
/// itself; otherwise the partition goes offline (leader -1) keeping its
/// ISR.
pub fn offline_partition_leader_election(
    state: &LeaderAndIsr,
    replicas: &[i32],
    live: &[i32],
    shutting_down: &BTreeSet<i32>,
    unclean: bool,
    controller_epoch: i32,
) -> Option<Elected> {
    let live_isr: Vec<i32> = state
        .isr
        .iter()
        .copied()
        .filter(|b| live.contains(b))
        .collect();
    if live.contains(&state.leader) {
        return (live_isr.len() < state.isr.len() && !live_isr.is_empty())
            .then(|| Elected::Clean(next(state, state.leader, live_isr, controller_epoch)));
    }
    // A broker in a controlled shutdown is about to go: never a new leader.
    let eligible = |r: &i32| live.contains(r) && !shutting_down.contains(r);
    if let Some(leader) = replicas
        .iter()
        .copied()
        .find(|r| eligible(r) && state.isr.contains(r))
    {
        return Some(Elected::Clean(next(
            state,
            leader,
            live_isr,
            controller_epoch,
        )));
    }
    if unclean {
        if let Some(leader) = replicas.iter().copied().find(eligible) {
            return Some(Elected::Unclean(next(
                state,
                leader,
                vec![leader],
                controller_epoch,
            )));
        }
    }
    (state.leader != LeaderAndIsr::NO_LEADER).then(|| {
        Elected::Offline(next(
            state,
            LeaderAndIsr::NO_LEADER,
            state.isr.clone(),
            controller_epoch,
        ))
    })
}

/// The leader an ElectLeaders request would give `partition`, decided on
/// the controller's cached state (Kafka's `PreferredReplicaPartition-
/// LeaderElection` and the unclean election of KIP-460): `registered` are
/// the registered brokers, `eligible` those of them not shutting down.
pub fn elect_leader_candidate(
    election: ElectionType,
    partition: &PartitionMetadata,
    registered: &[i32],
    eligible: &[i32],
) -> Result<i32, ResponseError> {
    match election {
        ElectionType::Preferred => match partition.replicas.first().copied() {
            Some(p) if p == partition.leader => Err(ResponseError::ElectionNotNeeded),
            Some(p) if eligible.contains(&p) && partition.isr.contains(&p) => Ok(p),
            _ => Err(ResponseError::PreferredLeaderNotAvailable),
        },
        ElectionType::Unclean => {
            if registered.contains(&partition.leader) {
                Err(ResponseError::ElectionNotNeeded)
            } else {
                partition
                    .replicas
                    .iter()
                    .copied()
                    .find(|r| eligible.contains(r))
                    .ok_or(ResponseError::EligibleLeadersNotAvailable)
            }
        }
    }
}

/// The same election decided again on the state read fresh from the store
/// (the cached one may trail a leader's ISR write): `leader` leads if the
/// election still allows it. `None`: it does not, or it leads already.
pub fn elect_leader_on_state(
    election: ElectionType,
    leader: i32,
    state: &LeaderAndIsr,
    registered: &[i32],
    controller_epoch: i32,
) -> Option<LeaderAndIsr> {
    let allowed = match election {
        ElectionType::Preferred => state.isr.contains(&leader),
        ElectionType::Unclean => !registered.contains(&state.leader),
    };
    let isr = if state.isr.contains(&leader) {
        state.isr.clone()
    } else {
        vec![leader]
    };
    (state.leader != leader && allowed).then(|| next(state, leader, isr, controller_epoch))
}

/// A partition's state once `broker` leaves it in a controlled shutdown
/// (Kafka's `ControlledShutdownPartitionLeaderElectionStrategy`): if it
/// leads, the first other in-sync replica that is `eligible` leads instead
/// (none: nothing changes, it keeps leading); it leaves the ISR unless it
/// is the last member. `None`: nothing changes.
pub fn leave_partition(
    state: &LeaderAndIsr,
    broker: i32,
    replicas: &[i32],
    eligible: impl Fn(i32) -> bool,
    controller_epoch: i32,
) -> Option<LeaderAndIsr> {
    let isr: Vec<i32> = state.isr.iter().copied().filter(|&b| b != broker).collect();
    if state.leader == broker {
        let leader = replicas
            .iter()
            .copied()
            .find(|&r| r != broker && isr.contains(&r) && eligible(r))?;
        return Some(next(state, leader, isr, controller_epoch));
    }
    (state.isr.contains(&broker) && !isr.is_empty())
        .then(|| next(state, state.leader, isr, controller_epoch))
}

/// The partitions the automatic rebalance gives back to their preferred
/// (first) replica (Kafka's `checkAndTriggerAutoLeaderRebalance`): for
/// each broker whose preferred partitions are led elsewhere in more than
/// `percentage` % of cases, those it may lead now (it is `eligible` and in
/// the ISR).
pub fn partitions_to_rebalance(
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
            config: Default::default(),
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

    fn set(ids: &[i32]) -> BTreeSet<i32> {
        ids.iter().copied().collect()
    }

    #[test]
    fn a_new_partition_is_led_by_its_first_live_replica() {
        assert_eq!(
            initial_state(&[3, 1, 2], &[1, 2], 7),
            LeaderAndIsr {
                leader: 1,
                leader_epoch: 0,
                isr: vec![1, 2],
                controller_epoch: 7
            }
        );
        assert_eq!(initial_state(&[3], &[1], 7).leader, LeaderAndIsr::NO_LEADER);
    }

    #[test]
    fn a_dead_leader_is_replaced_by_the_first_live_in_sync_replica() {
        let none = set(&[]);
        // Leader 1 died; 3 is first in assignment order among live ISR.
        let elected = offline_partition_leader_election(
            &state(1, &[1, 2, 3]),
            &[1, 3, 2],
            &[2, 3],
            &none,
            false,
            9,
        );
        assert_eq!(
            elected,
            Some(Elected::Clean(LeaderAndIsr {
                leader: 3,
                leader_epoch: 5,
                isr: vec![2, 3],
                controller_epoch: 9
            }))
        );
        // 3 is shutting down: 2 leads.
        let elected = offline_partition_leader_election(
            &state(1, &[1, 2, 3]),
            &[1, 3, 2],
            &[2, 3],
            &set(&[3]),
            false,
            9,
        );
        assert_eq!(elected.map(|e| e.into_state().leader), Some(2));
        // A live leader stays; dead ISR members leave, bumping the epoch.
        let elected = offline_partition_leader_election(
            &state(2, &[1, 2, 3]),
            &[1, 2, 3],
            &[2, 3],
            &none,
            false,
            9,
        );
        assert_eq!(
            elected
                .map(|e| e.into_state())
                .map(|s| (s.leader, s.leader_epoch, s.isr)),
            Some((2, 5, vec![2, 3]))
        );
        // Nothing changed: no new state.
        assert_eq!(
            offline_partition_leader_election(
                &state(2, &[2, 3]),
                &[1, 2, 3],
                &[2, 3],
                &none,
                false,
                9
            ),
            None
        );
    }

    #[test]
    fn without_a_live_in_sync_replica_a_partition_goes_offline_unless_unclean() {
        let none = set(&[]);
        let offline =
            offline_partition_leader_election(&state(1, &[1]), &[1, 2], &[2], &none, false, 9);
        assert_eq!(
            offline,
            Some(Elected::Offline(LeaderAndIsr {
                leader: LeaderAndIsr::NO_LEADER,
                leader_epoch: 5,
                isr: vec![1],
                controller_epoch: 9
            }))
        );
        // Already offline: nothing to write again.
        assert_eq!(
            offline_partition_leader_election(&state(-1, &[1]), &[1, 2], &[2], &none, false, 9),
            None
        );
        let unclean =
            offline_partition_leader_election(&state(1, &[1]), &[1, 2], &[2], &none, true, 9);
        assert_eq!(
            unclean,
            Some(Elected::Unclean(LeaderAndIsr {
                leader: 2,
                leader_epoch: 5,
                isr: vec![2],
                controller_epoch: 9
            }))
        );
        // The last in-sync replica returns: it leads again, cleanly.
        let back =
            offline_partition_leader_election(&state(-1, &[1]), &[2, 1], &[1, 2], &none, false, 9);
        assert_eq!(back.map(|e| e.into_state().leader), Some(1));
    }

    #[test]
    fn elect_leaders_follows_kip_460() {
        let partition = |leader, replicas: &[i32], isr: &[i32]| PartitionMetadata {
            leader,
            leader_epoch: 3,
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            zk_version: 0,
        };
        use ElectionType::*;
        assert_eq!(
            elect_leader_candidate(Preferred, &partition(2, &[1, 2], &[1, 2]), &[1, 2], &[1, 2]),
            Ok(1)
        );
        assert_eq!(
            elect_leader_candidate(Preferred, &partition(1, &[1, 2], &[1, 2]), &[1, 2], &[1, 2]),
            Err(ResponseError::ElectionNotNeeded)
        );
        assert_eq!(
            elect_leader_candidate(Preferred, &partition(2, &[1, 2], &[2]), &[1, 2], &[1, 2]),
            Err(ResponseError::PreferredLeaderNotAvailable)
        );
        assert_eq!(
            elect_leader_candidate(Unclean, &partition(2, &[1, 2], &[2]), &[1, 2], &[1, 2]),
            Err(ResponseError::ElectionNotNeeded)
        );
        assert_eq!(
            elect_leader_candidate(Unclean, &partition(-1, &[3, 1], &[3]), &[1], &[1]),
            Ok(1)
        );
        // Decided again on the fresh state: the ISR moved meanwhile.
        assert_eq!(
            elect_leader_on_state(Preferred, 1, &state(2, &[2]), &[1, 2], 9),
            None
        );
        assert_eq!(
            elect_leader_on_state(Unclean, 1, &state(-1, &[3]), &[1], 9),
            Some(LeaderAndIsr {
                leader: 1,
                leader_epoch: 5,
                isr: vec![1],
                controller_epoch: 9
            })
        );
    }
}
