//! What the active controller sends the other brokers (Kafka's
//! ControllerBrokerRequestBatch): LeaderAndIsr, UpdateMetadata and
//! StopReplica built from the topics that changed, delivered in order
//! through each broker's channel.

use super::*;
use crate::controller::requests::{self, Stamp};

impl Shared {
    /// Sends `requests` to `broker` in order (queued now, answered later;
    /// failures are logged: the broker re-learns everything when it comes
    /// back or a new controller is elected).
    pub(super) fn deliver(&self, broker: i32, requests: Vec<ControlRequest>) {
        let Some(channel) = self.channel(broker) else {
            return;
        };
        // Each `send` is queued at once, so per-broker order holds.
        let answers: Vec<_> = requests
            .into_iter()
            .map(|request| channel.send(Deliver(request)))
            .collect();
        actix::spawn(async move {
            for answer in answers {
                match answer.await {
                    Ok(Ok(answer)) if answer.error_code == 0 => {}
                    Ok(Ok(answer)) => {
                        log::warn!(
                            "broker {broker} refused a control request: error {}",
                            answer.error_code
                        )
                    }
                    Ok(Err(e)) => log::warn!("{e}"),
                    // The channel panicked on it: restarted, it delivers
                    // it again before the next one.
                    Err(e) => log::warn!("the channel to broker {broker} restarted ({e})"),
                }
            }
        });
    }

    /// LeaderAndIsr for the partitions of `topics` that `broker` holds a
    /// replica of, then UpdateMetadata with all of `topics`.
    pub(super) fn send_topics_to(&self, broker: i32, topics: &[TopicMetadata]) {
        let mut requests = Vec::new();
        if let Some(request) = self.leader_and_isr_request(broker, topics) {
            requests.push(ControlRequest::LeaderAndIsr(request));
        }
        requests.push(ControlRequest::UpdateMetadata(
            self.update_metadata_request(broker, topics),
        ));
        self.deliver(broker, requests);
    }

    /// Tells every broker about `topics` (after a creation, a new
    /// partition, a leader change): this one through its replica manager
    /// (UpdateMetadata; its own replicas took up their LeaderAndIsr
    /// already), the others through their channels.
    pub(super) async fn propagate(&self, topics: &[TopicMetadata]) -> Result<(), ControllerError> {
        if !self.is_active() {
            return Ok(());
        }
        self.publish_locally(topics).await?;
        for broker in self.remote_brokers() {
            self.send_topics_to(broker, topics);
        }
        Ok(())
    }

    /// UpdateMetadata with `topics` and the live brokers to this broker's
    /// replica manager, fenced as a remote controller's would be: the only
    /// way the active controller's decisions reach its own broker's
    /// metadata cache. Waited for, so what this controller answers a
    /// client next is what this broker serves.
    pub(super) async fn publish_locally(
        &self,
        topics: &[TopicMetadata],
    ) -> Result<(), ControllerError> {
        if !self.is_active() {
            return Ok(());
        }
        let request = self.update_metadata_request(self.broker_id, topics);
        match self
            .replica_manager
            .send(ApplyUpdateMetadata(request))
            .await
        {
            Ok(Ok(answer)) if answer.error_code == 0 => Ok(()),
            Ok(Ok(answer)) => {
                // Refused: a newer controller fenced this one off.
                log::warn!(
                    "this broker refused its own controller's UpdateMetadata: error {}",
                    answer.error_code
                );
                Err(ControllerError::ControllerMoved {
                    epoch: self.controller_epoch(),
                })
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ControllerError::Stopped),
        }
    }

    /// A request from this controller at its epoch, for `broker`'s
    /// current registration.
    fn stamp(&self, broker: i32) -> Stamp {
        Stamp {
            controller_id: self.broker_id,
            controller_epoch: self.controller_epoch(),
            broker_epoch: self.broker_epoch_of(broker),
        }
    }

    /// LeaderAndIsr for the partitions of `topics` that `broker` holds a
    /// replica of (`controller::requests::leader_and_isr`).
    pub(super) fn leader_and_isr_request(
        &self,
        broker: i32,
        topics: &[TopicMetadata],
    ) -> Option<LeaderAndIsrRequest> {
        let stamp = self.stamp(broker);
        self.context(|c| requests::leader_and_isr(stamp, broker, topics, c.endpoints()))
    }

    /// UpdateMetadata with `topics`' partitions and the live brokers.
    pub(super) fn update_metadata_request(
        &self,
        broker: i32,
        topics: &[TopicMetadata],
    ) -> UpdateMetadataRequest {
        let stamp = self.stamp(broker);
        self.context(|c| requests::update_metadata(stamp, topics, c.endpoints()))
    }

    /// StopReplica for `topics`, stamped for `broker`.
    pub(super) fn stop_replica_request(
        &self,
        broker: i32,
        topics: Vec<StopReplicaTopicState>,
    ) -> StopReplicaRequest {
        requests::stop_replica(self.stamp(broker), topics)
    }

    /// Tells every other broker that `topic` is being deleted
    /// (UpdateMetadata with Kafka's deletion leader), and asks the brokers
    /// in `ask` to delete their replicas (StopReplica with deletion).
    /// Answers, per broker asked, whether it deleted them all within
    /// `DELETION_CONFIRMATION_TIMEOUT`.
    pub(super) async fn propagate_deletion(
        &self,
        topic: &TopicMetadata,
        ask: &[i32],
    ) -> Vec<(i32, bool)> {
        if !self.is_active() {
            return Vec::new();
        }
        let mut confirmations = Vec::new();
        let deleted = requests::marked_for_deletion(topic);
        for broker in self.remote_brokers() {
            let held = requests::stop_replica_topic(topic, broker, true);
            if let (true, Some(held), Some(channel)) =
                (ask.contains(&broker), held, self.channel(broker))
            {
                let request =
                    ControlRequest::StopReplica(self.stop_replica_request(broker, vec![held]));
                // Each broker has its own time limit: one silent broker
                // does not void the others' answers.
                confirmations.push(async move {
                    let answer = tokio::time::timeout(
                        DELETION_CONFIRMATION_TIMEOUT,
                        channel.send(Deliver(request)),
                    )
                    .await;
                    (broker, answer)
                });
            }
            self.deliver(
                broker,
                vec![ControlRequest::UpdateMetadata(
                    self.update_metadata_request(broker, std::slice::from_ref(&deleted)),
                )],
            );
        }
        let mut answered: Vec<(i32, bool)> = futures_util::future::join_all(confirmations)
            .await
            .into_iter()
            .map(|(broker, answer)| {
                let deleted = match answer {
                    Ok(Ok(Ok(answer)))
                        if answer.error_code == 0 && answer.partition_errors == 0 =>
                    {
                        true
                    }
                    Ok(Ok(Ok(answer))) => {
                        log::warn!(
                            "broker {broker} did not delete topic {}'s replicas (error {}, {} \
                             partition error(s))",
                            topic.name,
                            answer.error_code,
                            answer.partition_errors
                        );
                        false
                    }
                    Ok(Ok(Err(e))) => {
                        log::warn!("deleting topic {}'s replicas: {e}", topic.name);
                        false
                    }
                    Ok(Err(_)) | Err(_) => false,
                };
                (broker, deleted)
            })
            .collect();
        // Asked, but no channel or no replica there: nothing to delete
        // there means deleted; no channel means not reached.
        for &broker in ask {
            if answered.iter().any(|(b, _)| *b == broker) {
                continue;
            }
            let holds = topic
                .partitions
                .values()
                .any(|p| p.replicas.contains(&broker));
            answered.push((broker, !holds));
        }
        answered
    }

    /// This broker's replicas of `topic`'s `partitions` take up their
    /// states: the controller's LeaderAndIsr to its own broker, through the
    /// replica manager's fence as a remote controller's would. Answers a
    /// code per partition.
    pub(super) async fn become_leader_or_follower(
        &self,
        topic: &TopicMetadata,
        partitions: &[i32],
    ) -> Result<Vec<(i32, i16)>, ControllerError> {
        // The leaders' addresses, as LeaderAndIsr's live leaders give a
        // remote broker: this broker's cache may not know them yet.
        let leaders = self.context(|c| {
            partitions
                .iter()
                .filter_map(|index| topic.partitions.get(index))
                .filter_map(|p| c.endpoints().get(&p.leader))
                .map(|b| (b.id, format!("{}:{}", b.host, b.port)))
                .collect()
        });
        let decision = BecomeLeaderOrFollower {
            controller_epoch: self.controller_epoch(),
            topic: topic.clone(),
            partitions: partitions.to_vec(),
            leaders,
        };
        match self.replica_manager.send(decision).await {
            Ok(codes) => codes.map(|PartitionCodes(codes)| codes),
            Err(_) => Err(ControllerError::Stopped),
        }
    }

    /// Stops this broker's replicas of `partitions`, deleting their logs
    /// when `delete` (the controller's StopReplica to its own broker).
    /// Says whether all of them stopped (and were deleted).
    pub(super) async fn stop_local_replicas(
        &self,
        partitions: Vec<TopicPartition>,
        delete: bool,
    ) -> Result<bool, ControllerError> {
        let stop = StopReplicas {
            controller_epoch: self.controller_epoch(),
            partitions,
            delete,
        };
        match self.replica_manager.send(stop).await {
            Ok(stopped) => stopped.map(|ReplicasStopped { all }| all),
            Err(_) => Err(ControllerError::Stopped),
        }
    }
}
