//! Broker membership at the active controller: `/brokers/ids` read into
//! the controller context, one channel per live broker, broker joins and
//! leaves (KIP-380's bounced brokers), and leaders' ISR change
//! notifications.

use super::*;

impl Shared {
    /// The live brokers: the active controller's view, else the broker's
    /// metadata cache.
    pub(super) fn live_brokers(&self) -> Vec<i32> {
        match self.context(|c| c.role.active.then(|| c.live_brokers())) {
            Some(live) => live,
            None => self.cache.read(|m| m.brokers.keys().copied().collect()),
        }
    }

    /// Broker `id`'s endpoint and registration zxid from `/brokers/ids/<id>`;
    /// none when it is not registered or registered no PLAINTEXT endpoint.
    pub(super) async fn registration_of(
        &self,
        id: i32,
    ) -> Result<Option<(BrokerEndpoint, i64)>, ControllerError> {
        let Some((bytes, stat)) = self.store.get(&BrokerIdZNode::path(id)).await? else {
            return Ok(None);
        };
        let info = BrokerIdZNode::decode(id, &bytes)?;
        let listeners = info.listener_endpoints();
        let inter_broker = self.config.inter_broker_listener_name();
        // The inter-broker listener; a single broker on the embedded store
        // may have none (no broker dials it), then its first listener.
        let Some(reach) = listeners
            .iter()
            .find(|l| l.name == inter_broker)
            .or(listeners.first())
        else {
            log::warn!("broker {id} registered no endpoint it can be reached on; ignored");
            return Ok(None);
        };
        let endpoint = BrokerEndpoint {
            id,
            host: reach.host.clone(),
            port: reach.port,
            rack: info.rack.clone(),
            listeners: listeners.clone(),
        };
        Ok(Some((endpoint, stat.creation_zxid)))
    }

    /// Reads `/brokers/ids` into the controller context and keeps one
    /// channel per other live broker. Returns the ids that joined and left.
    pub(super) async fn load_brokers(&self) -> Result<BrokerChanges, ControllerError> {
        let mut live = BTreeMap::new();
        for child in self.store.children(BrokerIdsZNode::PATH).await? {
            let Ok(id) = child.parse::<i32>() else {
                continue;
            };
            if let Some(registered) = self.registration_of(id).await? {
                live.insert(id, registered);
            }
        }
        let changes = self.update_context(|c| c.set_registrations(live.clone()));
        for id in &changes.bounced {
            log::info!("broker {id} registered again with a new broker epoch");
        }
        let mut channels = match self.channels.lock() {
            Ok(channels) => channels,
            Err(poisoned) => poisoned.into_inner(),
        };
        channels.retain(|id, _| live.contains_key(id) && !changes.bounced.contains(id));
        for (id, (endpoint, _)) in &live {
            if *id == self.broker_id || channels.contains_key(id) {
                continue;
            }
            let address = format!("{}:{}", endpoint.host, endpoint.port);
            let channel =
                ControllerChannel::start(*id, address, self.broker_id, self.inter_broker.clone());
            channels.insert(*id, channel);
        }
        Ok(changes)
    }

    pub(super) fn remote_brokers(&self) -> Vec<i32> {
        self.live_brokers()
            .into_iter()
            .filter(|&id| id != self.broker_id)
            .collect()
    }

    pub(super) fn channel(&self, broker: i32) -> Option<Addr<ControllerChannel>> {
        match self.channels.lock() {
            Ok(channels) => channels.get(&broker).map(|c| c.addr.clone()),
            Err(poisoned) => poisoned.into_inner().get(&broker).map(|c| c.addr.clone()),
        }
    }

    pub(super) fn broker_epoch_of(&self, broker: i32) -> i64 {
        self.context(|c| c.broker_epoch_of(broker))
    }

    /// `/brokers/ids` changed: partitions whose leader left get a live ISR
    /// member as leader (none: offline, leader -1, until one returns, as
    /// Kafka does without unclean election), brokers that left leave the
    /// ISRs, offline partitions whose ISR member is back get it as leader
    /// (`Shared::elect`); the replicas of what changed get LeaderAndIsr,
    /// every broker UpdateMetadata, and brokers that joined everything.
    pub(super) async fn brokers_changed(
        &self,
        _change: BrokersChanged,
    ) -> Result<(), ControllerError> {
        if !self.is_active() {
            return Ok(());
        }
        let BrokerChanges {
            joined,
            left,
            bounced,
        } = self.load_brokers().await?;
        if joined.is_empty() && left.is_empty() {
            return Ok(());
        }
        for id in &left {
            log::info!("broker {id} left the cluster");
        }
        for id in &joined {
            log::info!("broker {id} joined the cluster");
        }
        let live = self.live_brokers();
        let mut changed: BTreeMap<String, TopicMetadata> = BTreeMap::new();
        // KIP-380: a bounced broker is first failed over as a dead one (its
        // old incarnation may have lost records it led), then taken back.
        if !bounced.is_empty() {
            let without: Vec<i32> = live
                .iter()
                .copied()
                .filter(|b| !bounced.contains(b))
                .collect();
            for topic in self.reelect_all(&without).await? {
                changed.insert(topic.name.clone(), topic);
            }
        }
        for topic in self.reelect_all(&live).await? {
            changed.insert(topic.name.clone(), topic);
        }
        let changed: Vec<TopicMetadata> = changed.into_values().collect();
        // This broker learns the new broker list and what changed as the
        // others do; joined brokers get everything.
        self.publish_locally(&changed).await?;
        let everything = self.all_topics();
        for broker in self.remote_brokers() {
            if joined.contains(&broker) {
                self.send_topics_to(broker, &everything);
            } else {
                self.send_topics_to(broker, &changed);
            }
        }
        if !joined.is_empty() {
            // Kafka's TopicDeletionManager on broker start-up: deletions
            // that waited for a replica on a returning broker go on.
            self.finish_pending_deletions().await?;
        }
        Ok(())
    }

    /// `/isr_change_notification` changed: leaders changed ISRs. Read the
    /// states they name into the context, tell every broker (UpdateMetadata,
    /// as Kafka's `IsrChangeNotification` handler does) and delete the
    /// notifications.
    pub(super) async fn isr_changes_notified(
        &self,
        change: IsrChangesNotified,
    ) -> Result<(), ControllerError> {
        if !self.is_active() || change.names.is_empty() {
            return Ok(());
        }
        let named: std::collections::BTreeSet<TopicPartition> = self
            .read_notifications(
                &change.names,
                IsrChangeNotificationZNode::path,
                IsrChangeNotificationZNode::decode,
            )
            .await?
            .into_iter()
            .flatten()
            .collect();
        let mut changed: BTreeMap<String, TopicMetadata> = BTreeMap::new();
        let mut read: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for tp in named {
            let Some(mut topic) = changed.remove(&tp.topic).or_else(|| self.topic(&tp.topic))
            else {
                continue;
            };
            let Some(p) = topic.partitions.get_mut(&tp.partition) else {
                continue;
            };
            let Some((bytes, stat)) = self.store.get(&TopicPartitionStateZNode::path(&tp)).await?
            else {
                continue;
            };
            let state = TopicPartitionStateZNode::decode(&tp, &bytes)?;
            *p = partition_metadata(&state, &p.replicas, stat.version);
            read.entry(tp.topic.clone()).or_default().push(tp.partition);
            changed.insert(tp.topic.clone(), topic);
        }
        for topic in changed.values() {
            self.remember(topic.clone());
        }
        // Every broker hears of the partitions whose ISR changed only.
        let changed: Vec<TopicMetadata> = changed
            .into_iter()
            .map(|(name, topic)| topic.only(read.get(&name).map_or(&[][..], Vec::as_slice)))
            .collect();
        self.publish_locally(&changed).await?;
        for broker in self.remote_brokers() {
            self.deliver(
                broker,
                vec![ControlRequest::UpdateMetadata(
                    self.update_metadata_request(broker, &changed),
                )],
            );
        }
        // Deleted only once the states they name are read and sent: a
        // controller that dies before this leaves them for its successor.
        self.delete_notifications(&change.names, IsrChangeNotificationZNode::path)
            .await
    }

    /// Reads the sequential notifications `names` (their znodes at
    /// `path_of`), each decoded; one that is gone or undecodable is skipped
    /// (logged).
    pub(super) async fn read_notifications<T>(
        &self,
        names: &[String],
        path_of: fn(&str) -> String,
        decode: fn(&str, &[u8]) -> Result<T, MetadataError>,
    ) -> Result<Vec<T>, ControllerError> {
        let mut read = Vec::with_capacity(names.len());
        for name in names {
            let path = path_of(name);
            if let Some((bytes, _)) = self.store.get(&path).await? {
                match decode(name, &bytes) {
                    Ok(notice) => read.push(notice),
                    Err(e) => log::warn!("ignoring {path}: {e}"),
                }
            }
        }
        Ok(read)
    }

    /// Deletes the notifications `names` once handled (one already gone
    /// counts as deleted). A controller that dies before leaves them for
    /// its successor.
    pub(super) async fn delete_notifications(
        &self,
        names: &[String],
        path_of: fn(&str) -> String,
    ) -> Result<(), ControllerError> {
        for name in names {
            match self.store.delete(&path_of(name), None).await {
                Ok(()) | Err(MetadataError::NoNode(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
