//! Kafka's ControllerBrokerRequestBatch, its building half: the
//! LeaderAndIsr, UpdateMetadata and StopReplica one broker is sent, built
//! from the partitions the caller says changed (a `TopicMetadata` narrowed
//! with `only`), never from the whole cache. Pure: the actor
//! (`actors/controller/requests.rs`) stamps each request for its broker,
//! delivers it in order and reads the answers.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::leader_and_isr_request::{
    LeaderAndIsrLiveLeader, LeaderAndIsrPartitionState, LeaderAndIsrTopicState,
};
use kafka_protocol::messages::stop_replica_request::{
    StopReplicaPartitionState, StopReplicaTopicState,
};
use kafka_protocol::messages::update_metadata_request::{
    UpdateMetadataBroker, UpdateMetadataEndpoint, UpdateMetadataPartitionState,
    UpdateMetadataTopicState,
};
use kafka_protocol::messages::{
    BrokerId, LeaderAndIsrRequest, StopReplicaRequest, TopicName, UpdateMetadataRequest,
};
use kafka_protocol::protocol::StrBytes;

use crate::cluster::{BrokerEndpoint, TopicMetadata};

/// Kafka's `LeaderAndIsr.LeaderDuringDelete`: UpdateMetadata's mark for a
/// partition being deleted.
pub const LEADER_DURING_DELETE: i32 = -2;

/// Who sends a request and to which registration of its broker: the
/// fence the receiving replica manager checks (`fence.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub controller_id: i32,
    pub controller_epoch: i32,
    /// The receiving broker's epoch (KIP-380), -1 when unknown.
    pub broker_epoch: i64,
}

fn name_of(topic: &TopicMetadata) -> TopicName {
    TopicName(StrBytes::from_string(topic.name.clone()))
}

fn ids(brokers: &[i32]) -> Vec<BrokerId> {
    brokers.iter().map(|&b| BrokerId(b)).collect()
}

/// LeaderAndIsr for the partitions of `topics` that `broker` holds a
/// replica of, with the live leaders among `live` (their endpoints); none
/// when it holds none.
pub fn leader_and_isr(
    stamp: Stamp,
    broker: i32,
    topics: &[TopicMetadata],
    live: &BTreeMap<i32, BrokerEndpoint>,
) -> Option<LeaderAndIsrRequest> {
    let mut leaders = BTreeSet::new();
    let topic_states: Vec<LeaderAndIsrTopicState> = topics
        .iter()
        .filter_map(|topic| {
            let partitions: Vec<LeaderAndIsrPartitionState> = topic
                .partitions
                .iter()
                .filter(|(_, p)| p.replicas.contains(&broker))
                .map(|(&index, p)| {
                    leaders.insert(p.leader);
                    LeaderAndIsrPartitionState::default()
                        .with_partition_index(index)
                        .with_controller_epoch(stamp.controller_epoch)
                        .with_leader(BrokerId(p.leader))
                        .with_leader_epoch(p.leader_epoch)
                        .with_isr(ids(&p.isr))
                        .with_partition_epoch(p.zk_version)
                        .with_replicas(ids(&p.replicas))
                })
                .collect();
            (!partitions.is_empty()).then(|| {
                LeaderAndIsrTopicState::default()
                    .with_topic_name(name_of(topic))
                    .with_topic_id(uuid::Uuid::from_bytes(topic.topic_id))
                    .with_partition_states(partitions)
            })
        })
        .collect();
    if topic_states.is_empty() {
        return None;
    }
    let live_leaders = leaders
        .iter()
        .filter_map(|id| live.get(id))
        .map(|b| {
            LeaderAndIsrLiveLeader::default()
                .with_broker_id(BrokerId(b.id))
                .with_host_name(StrBytes::from_string(b.host.clone()))
                .with_port(b.port as i32)
        })
        .collect();
    Some(
        LeaderAndIsrRequest::default()
            .with_controller_id(BrokerId(stamp.controller_id))
            .with_controller_epoch(stamp.controller_epoch)
            .with_broker_epoch(stamp.broker_epoch)
            .with_topic_states(topic_states)
            .with_live_leaders(live_leaders),
    )
}

/// UpdateMetadata with every partition of `topics` and the brokers `live`
/// (every broker gets every partition given, replica or not).
pub fn update_metadata(
    stamp: Stamp,
    topics: &[TopicMetadata],
    live: &BTreeMap<i32, BrokerEndpoint>,
) -> UpdateMetadataRequest {
    let live_brokers = live
        .values()
        .map(|b| {
            UpdateMetadataBroker::default()
                .with_id(BrokerId(b.id))
                .with_endpoints(if b.listeners.is_empty() {
                    vec![UpdateMetadataEndpoint::default()
                        .with_host(StrBytes::from_string(b.host.clone()))
                        .with_port(b.port as i32)
                        .with_listener(StrBytes::from_static_str("PLAINTEXT"))
                        .with_security_protocol(0)]
                } else {
                    b.listeners
                        .iter()
                        .map(|l| {
                            UpdateMetadataEndpoint::default()
                                .with_host(StrBytes::from_string(l.host.clone()))
                                .with_port(l.port as i32)
                                .with_listener(StrBytes::from_string(l.name.clone()))
                                .with_security_protocol(l.security_protocol.id())
                        })
                        .collect()
                })
                .with_rack(b.rack.clone().map(StrBytes::from_string))
        })
        .collect();
    let topic_states = topics
        .iter()
        .map(|topic| {
            UpdateMetadataTopicState::default()
                .with_topic_name(name_of(topic))
                .with_topic_id(uuid::Uuid::from_bytes(topic.topic_id))
                .with_partition_states(
                    topic
                        .partitions
                        .iter()
                        .map(|(&index, p)| {
                            UpdateMetadataPartitionState::default()
                                .with_partition_index(index)
                                .with_controller_epoch(stamp.controller_epoch)
                                .with_leader(BrokerId(p.leader))
                                .with_leader_epoch(p.leader_epoch)
                                .with_isr(ids(&p.isr))
                                .with_zk_version(p.zk_version)
                                .with_replicas(ids(&p.replicas))
                        })
                        .collect(),
                )
        })
        .collect();
    UpdateMetadataRequest::default()
        .with_controller_id(BrokerId(stamp.controller_id))
        .with_controller_epoch(stamp.controller_epoch)
        .with_broker_epoch(stamp.broker_epoch)
        .with_topic_states(topic_states)
        .with_live_brokers(live_brokers)
}

/// StopReplica for `topics`.
pub fn stop_replica(stamp: Stamp, topics: Vec<StopReplicaTopicState>) -> StopReplicaRequest {
    StopReplicaRequest::default()
        .with_controller_id(BrokerId(stamp.controller_id))
        .with_controller_epoch(stamp.controller_epoch)
        .with_broker_epoch(stamp.broker_epoch)
        .with_topic_states(topics)
}

/// StopReplica's entry for `topic` at `broker`: the partitions it holds a
/// replica of, each at its leader epoch; none when it holds none.
pub fn stop_replica_topic(
    topic: &TopicMetadata,
    broker: i32,
    delete: bool,
) -> Option<StopReplicaTopicState> {
    let held: Vec<StopReplicaPartitionState> = topic
        .partitions
        .iter()
        .filter(|(_, p)| p.replicas.contains(&broker))
        .map(|(&index, p)| {
            StopReplicaPartitionState::default()
                .with_partition_index(index)
                .with_leader_epoch(p.leader_epoch)
                .with_delete_partition(delete)
        })
        .collect();
    (!held.is_empty()).then(|| {
        StopReplicaTopicState::default()
            .with_topic_name(name_of(topic))
            .with_partition_states(held)
    })
}

/// `topic` as UpdateMetadata tells of a topic being deleted: every
/// partition's leader is `LEADER_DURING_DELETE`.
pub fn marked_for_deletion(topic: &TopicMetadata) -> TopicMetadata {
    let mut marked = topic.clone();
    for p in marked.partitions.values_mut() {
        p.leader = LEADER_DURING_DELETE;
    }
    marked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::PartitionMetadata;

    const STAMP: Stamp = Stamp {
        controller_id: 1,
        controller_epoch: 7,
        broker_epoch: 42,
    };

    fn partition(leader: i32, replicas: &[i32]) -> PartitionMetadata {
        PartitionMetadata {
            leader,
            leader_epoch: 3,
            replicas: replicas.to_vec(),
            isr: replicas.to_vec(),
            zk_version: 5,
        }
    }

    /// Partition 0 on brokers 1 and 2 (led by 1), partition 1 on 2 and 3
    /// (led by 3).
    fn topic() -> TopicMetadata {
        TopicMetadata {
            name: "t".into(),
            topic_id: [9; 16],
            is_internal: false,
            partitions: BTreeMap::from([(0, partition(1, &[1, 2])), (1, partition(3, &[2, 3]))]),
            configs: BTreeMap::new(),
            config: Default::default(),
        }
    }

    fn live(ids: &[i32]) -> BTreeMap<i32, BrokerEndpoint> {
        ids.iter()
            .map(|&id| {
                let endpoint = BrokerEndpoint {
                    id,
                    host: format!("h{id}"),
                    port: 9000 + id as u16,
                    rack: None,
                    listeners: Vec::new(),
                };
                (id, endpoint)
            })
            .collect()
    }

    fn indexes_of(request: &LeaderAndIsrRequest) -> Vec<i32> {
        request.topic_states[0]
            .partition_states
            .iter()
            .map(|p| p.partition_index)
            .collect()
    }

    #[test]
    fn leader_and_isr_carries_only_the_partitions_the_broker_replicates() {
        let all = live(&[1, 2, 3]);
        let to_1 = leader_and_isr(STAMP, 1, &[topic()], &all).expect("broker 1 holds partition 0");
        assert_eq!(indexes_of(&to_1), vec![0]);
        let leaders: Vec<i32> = to_1.live_leaders.iter().map(|l| l.broker_id.0).collect();
        assert_eq!(leaders, vec![1], "only the leaders of what is sent");
        let to_2 = leader_and_isr(STAMP, 2, &[topic()], &all).expect("broker 2 holds both");
        assert_eq!(indexes_of(&to_2), vec![0, 1]);
        assert_eq!(leader_and_isr(STAMP, 4, &[topic()], &all), None);
    }

    #[test]
    fn leader_and_isr_is_stamped_and_carries_the_partition_state() {
        let request = leader_and_isr(STAMP, 3, &[topic()], &live(&[1, 2])).expect("held");
        assert_eq!(request.controller_id.0, 1);
        assert_eq!(request.controller_epoch, 7);
        assert_eq!(request.broker_epoch, 42);
        let state = &request.topic_states[0].partition_states[0];
        assert_eq!(state.partition_index, 1);
        assert_eq!(state.leader.0, 3);
        assert_eq!(state.leader_epoch, 3);
        assert_eq!(state.partition_epoch, 5);
        assert_eq!(state.controller_epoch, 7);
        assert_eq!(ids(&[2, 3]), state.isr);
        // Leader 3 is not live: no endpoint for it.
        assert!(request.live_leaders.is_empty());
    }

    #[test]
    fn update_metadata_carries_every_given_partition_to_any_broker() {
        let only_1 = topic().only(&[1]);
        let request = update_metadata(STAMP, &[only_1], &live(&[1, 2, 3]));
        assert_eq!(request.broker_epoch, 42);
        assert_eq!(request.live_brokers.len(), 3);
        assert_eq!(request.live_brokers[2].endpoints[0].port, 9003);
        let partitions: Vec<i32> = request.topic_states[0]
            .partition_states
            .iter()
            .map(|p| p.partition_index)
            .collect();
        assert_eq!(partitions, vec![1], "what changed, not the whole topic");
        assert_eq!(request.topic_states[0].partition_states[0].zk_version, 5);
    }

    #[test]
    fn stop_replica_names_the_held_partitions_only() {
        let entry = stop_replica_topic(&topic(), 3, true).expect("broker 3 holds partition 1");
        assert_eq!(entry.partition_states.len(), 1);
        assert_eq!(entry.partition_states[0].partition_index, 1);
        assert!(entry.partition_states[0].delete_partition);
        assert_eq!(entry.partition_states[0].leader_epoch, 3);
        assert_eq!(stop_replica_topic(&topic(), 4, true), None);
        let request = stop_replica(STAMP, vec![entry]);
        assert_eq!(request.controller_epoch, 7);
        assert_eq!(request.broker_epoch, 42);
    }

    #[test]
    fn a_topic_being_deleted_has_no_leader() {
        let marked = marked_for_deletion(&topic());
        assert!(marked.partitions.values().all(|p| p.leader == LEADER_DURING_DELETE));
        assert_eq!(marked.partitions[&1].isr, vec![2, 3], "the rest is kept");
    }
}
