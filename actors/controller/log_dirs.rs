//! Log dir failures (Kafka's `LogDirEventNotificationHandler` and
//! `onBrokerLogDirFailure`): a broker whose log goes offline leaves a
//! `/log_dir_event_notification` naming itself; the active controller sends
//! it a LeaderAndIsr for every replica it holds, and each replica answering
//! KAFKA_STORAGE_ERROR leaves its partition as in a controlled shutdown
//! (its leadership moves to another live in-sync replica, it leaves the
//! ISR). Kafka keeps such a replica offline until the broker restarts;
//! ferrolog's log manager reopens a log once the disk is back, the broker
//! then leaves another notification, and the same LeaderAndIsr starts the
//! replica's fetcher, so that it rejoins the ISR by catching up.

use super::*;

impl Shared {
    pub(super) async fn log_dir_events_notified(
        &self,
        change: LogDirEventsNotified,
    ) -> Result<(), ControllerError> {
        if !self.is_active() || change.names.is_empty() {
            return Ok(());
        }
        let brokers: std::collections::BTreeSet<i32> = self
            .read_notifications(
                &change.names,
                LogDirEventNotificationZNode::path,
                LogDirEventNotificationZNode::decode,
            )
            .await?
            .into_iter()
            .collect();
        let live = self.live_brokers();
        for broker in brokers.into_iter().filter(|b| live.contains(b)) {
            let offline = self.offline_replicas_on(broker).await?;
            if offline.is_empty() {
                log::info!("broker {broker}'s log dir event: every replica there is online");
                continue;
            }
            log::warn!(
                "broker {broker} has {} replica(s) on a failed log dir: moving their \
                 leadership away and taking them out of the ISR",
                offline.len()
            );
            let changed = self.leave_offline_replicas(broker, &offline).await?;
            self.propagate(&changed).await?;
        }
        self.delete_notifications(&change.names, LogDirEventNotificationZNode::path)
            .await
    }

    /// Sends `broker` a LeaderAndIsr for every replica it holds (this
    /// broker's own through `become_leader_or_follower`) and answers those that refused
    /// with KAFKA_STORAGE_ERROR. A replica back online takes its
    /// assignment up again on the way (a follower restarts its fetcher).
    async fn offline_replicas_on(
        &self,
        broker: i32,
    ) -> Result<Vec<TopicPartition>, ControllerError> {
        let topics: Vec<TopicMetadata> = self.context(|c| {
            c.topics()
                .filter(|t| t.partitions.values().any(|p| p.replicas.contains(&broker)))
                .cloned()
                .collect()
        });
        let storage_error = ResponseError::KafkaStorageError.code();
        let mut offline = Vec::new();
        if broker == self.broker_id {
            for topic in &topics {
                let indexes: Vec<i32> = topic.partitions.keys().copied().collect();
                for (index, code) in self.become_leader_or_follower(topic, &indexes).await? {
                    if code == storage_error {
                        offline.push(TopicPartition::new(topic.name.clone(), index));
                    }
                }
            }
            return Ok(offline);
        }
        let (Some(channel), Some(request)) = (
            self.channel(broker),
            self.leader_and_isr_request(broker, &topics),
        ) else {
            return Ok(offline);
        };
        let answer = match channel
            .send(Deliver(ControlRequest::LeaderAndIsr(request)))
            .await
        {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                log::warn!("asking broker {broker} which replicas are offline: {e}");
                return Ok(offline);
            }
            Err(_) => return Ok(offline),
        };
        let names: HashMap<[u8; 16], String> = topics
            .iter()
            .map(|t| (t.topic_id, t.name.clone()))
            .collect();
        for (topic_id, index) in answer.offline {
            if let Some(name) = names.get(&topic_id) {
                offline.push(TopicPartition::new(name.clone(), index));
            }
        }
        Ok(offline)
    }

    /// Each of `offline` leaves its partition as in a controlled shutdown
    /// of `broker` (`controller::election::leave_partition`): a new leader
    /// among the other live in-sync replicas (none: it keeps leading and
    /// serves again once its log is back), out of the ISR. Applies the
    /// results here and answers the topics that changed.
    async fn leave_offline_replicas(
        &self,
        broker: i32,
        offline: &[TopicPartition],
    ) -> Result<Vec<TopicMetadata>, ControllerError> {
        let live = self.live_brokers();
        let shutting_down = self.shutting_down();
        let eligible = |b: i32| b != broker && live.contains(&b) && !shutting_down.contains(&b);
        let mut by_topic: BTreeMap<&str, std::collections::BTreeSet<i32>> = BTreeMap::new();
        for tp in offline {
            by_topic.entry(&tp.topic).or_default().insert(tp.partition);
        }
        let mut changed = Vec::new();
        for (name, indexes) in by_topic {
            let Some(mut topic) = self.topic(name) else {
                continue;
            };
            let moved = self
                .rewrite_partitions(
                    &mut topic,
                    |index, _| indexes.contains(&index),
                    |tp, p| async move { self.leave(&tp, broker, &p, eligible).await },
                )
                .await?;
            self.take_up_moves(topic, &moved, &mut changed).await?;
        }
        Ok(changed)
    }
}
