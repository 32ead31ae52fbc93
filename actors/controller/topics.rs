//! Topic lifecycle at the active controller: topics taken up from the
//! store, created, given partitions, and deleted (Kafka's
//! TopicDeletionManager: a deletion waits for every replica).

use super::*;
use crate::config::topic::TopicConfig;

impl Shared {
    pub(super) async fn resume_deletions(
        &self,
        _msg: ResumeDeletions,
    ) -> Result<(), ControllerError> {
        if !self.is_active() || !self.config.delete_topic_enable {
            return Ok(());
        }
        self.finish_pending_deletions().await
    }

    pub(super) async fn finish_pending_deletions(&self) -> Result<(), ControllerError> {
        for topic in self
            .store
            .children(crate::metadata::znodes::DeleteTopicsZNode::path())
            .await?
        {
            log::info!("finishing the deletion of topic {topic} interrupted by a restart");
            self.delete_topic_data(&topic).await?;
        }
        Ok(())
    }

    pub(super) async fn load_topics(&self) -> Result<(), ControllerError> {
        for name in self.store.children(TopicsZNode::path()).await? {
            // A deletion waiting for an offline replica: not served again.
            if self.marked_for_deletion(&name).await? {
                continue;
            }
            self.load_topic(&name).await?;
        }
        Ok(())
    }

    /// Whether `/admin/delete_topics/<name>` marks the topic (a deletion in
    /// progress, or waiting for a broker that holds one of its replicas).
    pub(super) async fn marked_for_deletion(&self, name: &str) -> Result<bool, ControllerError> {
        Ok(self
            .store
            .get(&DeleteTopicsTopicZNode::path(name))
            .await?
            .is_some())
    }

    /// Takes up a topic from its znodes: ids and missing partition states
    /// are filled in, the partitions led here start.
    pub(super) async fn load_topic(&self, name: &str) -> Result<(), ControllerError> {
        let Some((bytes, stat)) = self.store.get(&TopicZNode::path(name)).await? else {
            return Ok(());
        };
        let TopicAssignment {
            partitions: assignment,
            topic_id,
        } = TopicZNode::decode(name, &bytes)?;
        let topic_id = match topic_id {
            Some(id) => id,
            // Written before Kafka 2.8 (or by an older ferrolog): give it
            // an id and keep it, as Kafka's controller does.
            None => {
                let id = new_topic_id();
                self.store
                    .set(
                        &TopicZNode::path(name),
                        TopicZNode::encode(&assignment, id),
                        Some(stat.version),
                    )
                    .await?;
                log::info!("topic {name} had no topic id; assigned one");
                id
            }
        };
        let mut configs = self.topic_configs(name).await?;
        if name == crate::group::OFFSETS_TOPIC {
            self.make_offsets_topic_compacted(&mut configs).await?;
        }
        let config = self.topic_config_for(&configs)?;
        let topic = self
            .become_leader(name, topic_id, &assignment, configs, config)
            .await?;
        self.remember(topic);
        Ok(())
    }

    /// `/brokers/topics` changed: take up topics that another writer (a
    /// ZooKeeper-era admin tool, `kafka-topics.sh --zookeeper`) created
    /// there, as Kafka's `TopicChange` handler does. Topics this
    /// controller created are known already.
    pub(super) async fn topics_changed(
        &self,
        change: TopicsChanged,
    ) -> Result<(), ControllerError> {
        if !self.is_active() {
            return Ok(());
        }
        for name in change.names {
            if self.has_topic(&name) {
                continue;
            }
            if let Err(e) = validate_topic_name(&name) {
                log::warn!("ignoring /brokers/topics/{name}: {e}");
                continue;
            }
            if self.marked_for_deletion(&name).await? {
                continue;
            }
            log::info!("taking up topic {name}, created in the metadata store by another writer");
            self.load_topic(&name).await?;
            let topic = self.topic(&name);
            if let Some(topic) = &topic {
                self.propagate(std::slice::from_ref(topic)).await?;
            }
            let partitions = topic.map_or(0, |t| t.partitions.len() as i32);
            self.partitions.events.publish(BrokerEvent::TopicCreated {
                topic: name,
                partitions,
            });
        }
        Ok(())
    }

    /// Gives a topic's new partitions (in `assignment`, written to the
    /// store) their leaders and tells the brokers.
    pub(super) async fn take_up_partitions(
        &self,
        name: String,
        topic: &TopicMetadata,
        assignment: &BTreeMap<i32, Vec<i32>>,
    ) -> Result<(), ControllerError> {
        let updated = self
            .become_leader(
                &name,
                topic.topic_id,
                assignment,
                topic.configs.clone(),
                topic.config.clone(),
            )
            .await?;
        log::info!(
            "topic {name} now has {} partitions",
            updated.partitions.len()
        );
        self.remember(updated.clone());
        self.propagate(std::slice::from_ref(&updated)).await
    }

    /// `/brokers/topics/<topic>` changed (Kafka's PartitionModifications):
    /// partitions that another broker added there get states, leaders and
    /// the brokers' attention.
    pub(super) async fn assignment_changed(
        &self,
        change: AssignmentChanged,
    ) -> Result<(), ControllerError> {
        if !self.is_active() {
            return Ok(());
        }
        let name = change.topic;
        let Some(topic) = self.topic(&name) else {
            return Ok(());
        };
        let Some((bytes, _)) = self.store.get(&TopicZNode::path(&name)).await? else {
            return Ok(());
        };
        let assignment = TopicZNode::decode(&name, &bytes)?.partitions;
        if assignment.keys().all(|p| topic.partitions.contains_key(p)) {
            return Ok(());
        }
        if self
            .store
            .get(&TopicPartitionsZNode::path(&name))
            .await?
            .is_none()
        {
            self.store
                .create_if_missing(&TopicPartitionsZNode::path(&name))
                .await?;
        }
        self.take_up_partitions(name, &topic, &assignment).await
    }

    /// `/admin/delete_topics` changed: delete the topics marked there (what
    /// `kafka-topics.sh --zookeeper --delete` writes), or drop the marks
    /// when `delete.topic.enable` is false, as Kafka does.
    pub(super) async fn deletions_requested(
        &self,
        marks: DeletionsRequested,
    ) -> Result<(), ControllerError> {
        if !self.is_active() {
            return Ok(());
        }
        for name in marks.names {
            let exists =
                self.has_topic(&name) || self.store.get(&TopicZNode::path(&name)).await?.is_some();
            if exists && self.config.delete_topic_enable {
                self.delete_topic_data(&name).await?;
                continue;
            }
            if exists {
                log::warn!(
                    "not deleting topic {name}, marked in {}: delete.topic.enable is false",
                    crate::metadata::znodes::DeleteTopicsZNode::path()
                );
            }
            match self
                .store
                .delete(&DeleteTopicsTopicZNode::path(&name), None)
                .await
            {
                Ok(()) | Err(MetadataError::NoNode(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Write missing partition states (electing leaders where needed),
    /// then make this broker's replicas of the topic lead or follow as the
    /// states say. Returns the topic as Metadata shows it.
    pub(super) async fn become_leader(
        &self,
        name: &str,
        topic_id: [u8; 16],
        assignment: &BTreeMap<i32, Vec<i32>>,
        configs: BTreeMap<String, String>,
        config: TopicConfig,
    ) -> Result<TopicMetadata, ControllerError> {
        let live = self.live_brokers();
        let unclean = self.unclean_allowed(&config);
        let mut partitions = BTreeMap::new();
        for (&index, replicas) in assignment {
            let tp = TopicPartition::new(name, index);
            let state_path = TopicPartitionStateZNode::path(&tp);
            let (state, version) = match self.reelect(&tp, replicas, &live, unclean).await? {
                Some(found) => found,
                None => {
                    let state = self.initial_state(replicas, &live);
                    let partition_path = TopicPartitionZNode::path(&tp);
                    let mut ops = Vec::new();
                    if self.store.get(&partition_path).await?.is_none() {
                        if self
                            .store
                            .get(&TopicPartitionsZNode::path(name))
                            .await?
                            .is_none()
                        {
                            ops.push(StoreOp::create(
                                TopicPartitionsZNode::path(name),
                                Vec::new(),
                            ));
                        }
                        ops.push(StoreOp::create(partition_path, Vec::new()));
                    }
                    ops.push(StoreOp::create(
                        state_path,
                        TopicPartitionStateZNode::encode(&state),
                    ));
                    self.controller_write(ops).await?;
                    (state, 0)
                }
            };
            partitions.insert(index, partition_metadata(&state, replicas, version));
        }
        let topic = TopicMetadata {
            name: name.to_string(),
            topic_id,
            is_internal: is_internal_topic(name),
            partitions,
            configs,
            config,
        };
        self.become_leader_or_follower(
            &topic,
            &topic.partitions.keys().copied().collect::<Vec<_>>(),
        )
        .await?;
        Ok(topic)
    }

    pub(super) async fn create_topic(
        &self,
        request: CreateTopic,
    ) -> Result<TopicMetadata, ControllerError> {
        if request.requester == TopicRequester::CreateTopicsRequest && !self.is_active() {
            return Err(ControllerError::NotController);
        }
        let name = request.name;
        validate_topic_name(&name).map_err(|e| ControllerError::InvalidTopic(e.to_string()))?;
        if self.has_topic(&name) || self.store.get(&TopicZNode::path(&name)).await?.is_some() {
            return Err(ControllerError::AlreadyExists(name));
        }
        let brokers = self.live_brokers();
        let assignment = if request.assignments.is_empty() {
            let partitions = if request.num_partitions == -1 {
                self.config.num_partitions
            } else {
                request.num_partitions
            };
            self.check_partition_count(partitions)?;
            let replication_factor = if request.replication_factor == -1 {
                self.config.default_replication_factor
            } else {
                request.replication_factor
            };
            let racked: Vec<(i32, Option<String>)> = self
                .live_endpoints()
                .values()
                .map(|b| (b.id, b.rack.clone()))
                .collect();
            assign_for_new_topic(&racked, partitions, replication_factor, seed_for(&name))?
        } else {
            if request.num_partitions != -1 || request.replication_factor != -1 {
                return Err(ControllerError::InvalidRequest(
                    "both replica assignments and partitions/replication factor were given".into(),
                ));
            }
            self.check_partition_count(request.assignments.len() as i32)?;
            validate_assignment(&request.assignments, &brokers, 0)?;
            request.assignments
        };
        self.check_open_files(assignment.values())?;
        let configs: BTreeMap<String, String> = request.configs.into_iter().collect();
        let config = self.topic_config_for(&configs)?;
        if request.validate_only {
            return Ok(TopicMetadata {
                name: name.clone(),
                topic_id: new_topic_id(),
                is_internal: is_internal_topic(&name),
                partitions: assignment
                    .iter()
                    .map(|(&p, replicas)| {
                        (
                            p,
                            PartitionMetadata {
                                leader: replicas[0],
                                leader_epoch: 0,
                                replicas: replicas.clone(),
                                isr: replicas.clone(),
                                zk_version: 0,
                            },
                        )
                    })
                    .collect(),
                configs,
                config,
            });
        }
        let topic_id = new_topic_id();
        // One transaction: the config first, then the topic, then every
        // partition's state, so a watcher that sees the topic finds its
        // config (Kafka's order) and the store writes once per topic.
        let config_path = ConfigEntityZNode::path(ConfigType::Topic, &name);
        let config_data = ConfigEntityZNode::encode(&configs);
        let mut ops = vec![match self.store.get(&config_path).await? {
            Some(_) => StoreOp::Set {
                path: config_path,
                data: config_data,
                expected_version: None,
            },
            None => StoreOp::create(config_path, config_data),
        }];
        ops.push(StoreOp::create(
            TopicZNode::path(&name),
            TopicZNode::encode(&assignment, topic_id),
        ));
        if !self.is_active() {
            // Not the controller: write the topic as Kafka's AdminZkClient
            // does from any broker; the controller's watch on
            // /brokers/topics takes it up and elects its leaders.
            self.store.multi(ops).await.map_err(|e| match e {
                MetadataError::NodeExists(_) => ControllerError::AlreadyExists(name.clone()),
                other => ControllerError::Store(other),
            })?;
            log::info!("wrote topic {name} for the controller to take up");
            return Ok(TopicMetadata {
                name: name.clone(),
                topic_id,
                is_internal: is_internal_topic(&name),
                partitions: assignment
                    .iter()
                    .map(|(&p, replicas)| {
                        (
                            p,
                            PartitionMetadata {
                                leader: LeaderAndIsr::NO_LEADER,
                                leader_epoch: 0,
                                replicas: replicas.clone(),
                                isr: Vec::new(),
                                zk_version: 0,
                            },
                        )
                    })
                    .collect(),
                configs,
                config,
            });
        }
        ops.push(StoreOp::create(
            TopicPartitionsZNode::path(&name),
            Vec::new(),
        ));
        ops.extend(self.partition_state_ops(&name, &assignment));
        fail::fail_point!("controller.create_topic.before_write", |_| {
            crate::crash_for_test()
        });
        self.controller_write(ops).await.map_err(|e| match e {
            ControllerError::Store(MetadataError::NodeExists(_)) => {
                ControllerError::AlreadyExists(name.clone())
            }
            other => other,
        })?;
        // Killed here, the topic is in the store with every partition's
        // state but no broker was told: the next controller takes it up.
        fail::fail_point!("controller.create_topic.written", |_| {
            crate::crash_for_test()
        });
        let topic = self
            .become_leader(&name, topic_id, &assignment, configs, config)
            .await?;
        log::info!(
            "created topic {name} with {} partition(s)",
            topic.partitions.len()
        );
        self.remember(topic.clone());
        self.propagate(std::slice::from_ref(&topic)).await?;
        self.partitions.events.publish(BrokerEvent::TopicCreated {
            topic: name.clone(),
            partitions: topic.partitions.len() as i32,
        });
        Ok(topic)
    }

    /// Refuse a partition count over `create.topic.max.partitions` before
    /// anything is allocated for it.
    /// Refuses new partitions whose replicas here would exceed the open-file
    /// limit (`open_files`), before anything is written.
    pub(super) fn check_open_files<'a>(
        &self,
        replicas: impl Iterator<Item = &'a Vec<i32>>,
    ) -> Result<(), ControllerError> {
        let here = replicas.filter(|r| r.contains(&self.broker_id)).count();
        match crate::open_files::refuse_if_out_of_files(here) {
            Some(reason) => Err(ControllerError::PolicyViolation(reason)),
            None => Ok(()),
        }
    }

    pub(super) fn check_partition_count(&self, count: i32) -> Result<(), ControllerError> {
        let max = self.config.create_topic_max_partitions;
        if count > max {
            return Err(ControllerError::InvalidPartitions(format!(
                "{count} partitions is more than create.topic.max.partitions ({max})"
            )));
        }
        Ok(())
    }

    /// A new partition's first state, as Kafka's: the first live replica
    /// in assignment order leads, leader epoch 0, and the ISR is every live
    /// replica (all empty, so all in sync).
    pub(super) fn initial_state(&self, replicas: &[i32], live: &[i32]) -> LeaderAndIsr {
        initial_state(replicas, live, self.controller_epoch())
    }

    /// Create each new partition's znode and its first state.
    pub(super) fn partition_state_ops(
        &self,
        name: &str,
        assignment: &BTreeMap<i32, Vec<i32>>,
    ) -> Vec<StoreOp> {
        let live = self.live_brokers();
        let mut ops = Vec::with_capacity(assignment.len() * 2);
        for (&index, replicas) in assignment {
            let tp = TopicPartition::new(name, index);
            let state = self.initial_state(replicas, &live);
            ops.push(StoreOp::create(TopicPartitionZNode::path(&tp), Vec::new()));
            ops.push(StoreOp::create(
                TopicPartitionStateZNode::path(&tp),
                TopicPartitionStateZNode::encode(&state),
            ));
        }
        ops
    }

    /// A DeleteTopics request's topic: off the active controller it is
    /// NOT_CONTROLLER, as in Kafka (`KafkaApis.handleDeleteTopicsRequest`).
    pub(super) async fn delete_topic(&self, name: String) -> Result<(), ControllerError> {
        if !self.is_active() {
            return Err(ControllerError::NotController);
        }
        if !self.config.delete_topic_enable {
            return Err(ControllerError::DeletionDisabled);
        }
        if !self.has_topic(&name) {
            return Err(ControllerError::UnknownTopic(name));
        }
        // The marker makes an interrupted deletion finish at the next start.
        self.store
            .create_if_missing(&DeleteTopicsTopicZNode::path(&name))
            .await?;
        fail::fail_point!("controller.delete_topic.marked", |_| {
            crate::crash_for_test()
        });
        self.delete_topic_data(&name).await
    }

    /// Deletes a topic as Kafka's TopicDeletionManager does
    /// (`controller::deletion`): every live broker holding replicas deletes
    /// them (this one at once, the others through StopReplica with
    /// deletion), and the topic's znodes go (the deletion mark last) only
    /// once every holder has. Until then the topic stays marked, is served
    /// nowhere, and cannot be created again; a holder's return
    /// (`brokers_changed`) or the retry timer resumes the deletion, asking
    /// only the holders that have not deleted yet.
    pub(super) async fn delete_topic_data(&self, name: &str) -> Result<(), ControllerError> {
        let topic = match self.forget(name) {
            Some(topic) => Some(topic),
            None => self.topic_from_store(name).await?,
        };
        // This broker stops serving it at once (UpdateMetadata with
        // Kafka's deletion leader, as the others get below).
        if let Some(topic) = &topic {
            self.publish_locally(&[crate::controller::requests::marked_for_deletion(topic)])
                .await?;
        }
        let partitions: BTreeMap<i32, Vec<i32>> = topic
            .as_ref()
            .map(|t| {
                t.partitions
                    .iter()
                    .map(|(&index, p)| (index, p.replicas.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let partition_count = partitions.len() as i32;
        let live = self.live_brokers();
        let asked = self.with_deletions(|d| {
            d.enqueue(name, partitions.values().flatten().copied());
            d.start(name, |b| live.contains(&b))
        });
        if asked.contains(&self.broker_id) {
            let local = partitions
                .keys()
                .map(|&index| TopicPartition::new(name, index))
                .collect();
            let deleted = self.stop_local_replicas(local, true).await?;
            self.with_deletions(|d| d.answered(name, self.broker_id, deleted));
        }
        if let Some(topic) = &topic {
            let remote: Vec<i32> = asked
                .iter()
                .copied()
                .filter(|&b| b != self.broker_id)
                .collect();
            for (broker, deleted) in self.propagate_deletion(topic, &remote).await {
                self.with_deletions(|d| d.answered(name, broker, deleted));
            }
        }
        if !self.with_deletions(|d| d.is_complete(name)) {
            let waiting = self.with_deletions(|d| d.waiting_for(name));
            log::warn!(
                "topic {name}: the deletion waits for broker(s) {waiting:?}, which hold replicas \
                 of it and have not deleted them (offline, or not answering)"
            );
            return Ok(());
        }
        for path in [
            TopicZNode::path(name),
            ConfigEntityZNode::path(ConfigType::Topic, name),
            DeleteTopicsTopicZNode::path(name),
        ] {
            match self.store.delete_recursive(&path).await {
                Ok(()) | Err(MetadataError::NoNode(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.with_deletions(|d| d.complete(name));
        log::info!("deleted topic {name}");
        self.partitions.events.publish(BrokerEvent::TopicDeleted {
            topic: name.to_string(),
            partitions: partition_count,
        });
        Ok(())
    }

    /// Runs `change` on the deletions in progress.
    pub(super) fn with_deletions<T>(
        &self,
        change: impl FnOnce(&mut crate::controller::deletion::TopicDeletions) -> T,
    ) -> T {
        self.update_context(|c| change(&mut c.deletions))
    }

    /// A topic as its znodes describe it (the assignment, and each
    /// partition's state where there is one), for a deletion resumed after
    /// the topic left the controller's view.
    pub(super) async fn topic_from_store(
        &self,
        name: &str,
    ) -> Result<Option<TopicMetadata>, ControllerError> {
        let Some((bytes, _)) = self.store.get(&TopicZNode::path(name)).await? else {
            return Ok(None);
        };
        let assignment = TopicZNode::decode(name, &bytes)?;
        let mut partitions = BTreeMap::new();
        for (&index, replicas) in &assignment.partitions {
            let tp = TopicPartition::new(name, index);
            let (state, version) =
                match self.store.get(&TopicPartitionStateZNode::path(&tp)).await? {
                    Some((bytes, stat)) => {
                        (TopicPartitionStateZNode::decode(&tp, &bytes)?, stat.version)
                    }
                    None => (self.initial_state(replicas, &[]), 0),
                };
            partitions.insert(index, partition_metadata(&state, replicas, version));
        }
        Ok(Some(TopicMetadata {
            name: name.to_string(),
            topic_id: assignment.topic_id.unwrap_or([0; 16]),
            is_internal: is_internal_topic(name),
            partitions,
            configs: BTreeMap::new(),
            config: TopicConfig {
                log: self.base_log_config(),
                ..TopicConfig::default()
            },
        }))
    }

    pub(super) async fn create_partitions(
        &self,
        request: CreatePartitions,
    ) -> Result<(), ControllerError> {
        // Off the active controller a CreatePartitions request is
        // NOT_CONTROLLER, as in Kafka (`handleCreatePartitionsRequest`).
        if !self.is_active() {
            return Err(ControllerError::NotController);
        }
        let name = request.name;
        let Some(topic) = self.topic(&name) else {
            return Err(ControllerError::UnknownTopic(name));
        };
        let current = topic.partitions.len() as i32;
        self.check_partition_count(request.count)?;
        if request.count <= current {
            return Err(ControllerError::InvalidPartitions(format!(
                "topic {name} has {current} partitions; the new count {} must be larger",
                request.count
            )));
        }
        let brokers = self.live_brokers();
        let replication_factor = topic
            .partitions
            .values()
            .next()
            .map_or(1, |p| p.replicas.len()) as i16;
        let added = match request.assignments {
            Some(lists) => {
                if lists.len() as i32 != request.count - current {
                    return Err(ControllerError::InvalidReplicaAssignment(format!(
                        "{} assignments given for {} new partitions",
                        lists.len(),
                        request.count - current
                    )));
                }
                let added: BTreeMap<i32, Vec<i32>> = lists
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| (current + i as i32, r))
                    .collect();
                validate_assignment(&added, &brokers, current)?;
                added
            }
            None => assign_replicas(
                &brokers,
                request.count - current,
                replication_factor,
                (seed_for(&name) % brokers.len().max(1) as u64) as usize,
                current,
                0,
            )?,
        };
        self.check_open_files(added.values())?;
        if request.validate_only {
            return Ok(());
        }
        let mut assignment: BTreeMap<i32, Vec<i32>> = topic
            .partitions
            .iter()
            .map(|(&p, m)| (p, m.replicas.clone()))
            .collect();
        assignment.extend(added);
        let mut ops = vec![StoreOp::Set {
            path: TopicZNode::path(&name),
            data: TopicZNode::encode(&assignment, topic.topic_id),
            expected_version: None,
        }];
        let added: BTreeMap<i32, Vec<i32>> = assignment
            .iter()
            .filter(|(p, _)| **p >= current)
            .map(|(p, r)| (*p, r.clone()))
            .collect();
        if self
            .store
            .get(&TopicPartitionsZNode::path(&name))
            .await?
            .is_none()
        {
            ops.push(StoreOp::create(
                TopicPartitionsZNode::path(&name),
                Vec::new(),
            ));
        }
        ops.extend(self.partition_state_ops(&name, &added));
        self.controller_write(ops).await?;
        fail::fail_point!("controller.create_partitions.written", |_| {
            crate::crash_for_test()
        });
        self.take_up_partitions(name, &topic, &assignment).await
    }
}

pub(super) fn partition_metadata(
    state: &LeaderAndIsr,
    replicas: &[i32],
    zk_version: i32,
) -> PartitionMetadata {
    PartitionMetadata {
        leader: state.leader,
        leader_epoch: state.leader_epoch,
        replicas: replicas.to_vec(),
        isr: state.isr.clone(),
        zk_version,
    }
}

pub(super) fn validate_assignment(
    assignment: &BTreeMap<i32, Vec<i32>>,
    brokers: &[i32],
    first_partition: i32,
) -> Result<(), ControllerError> {
    let invalid = |reason: String| Err(ControllerError::InvalidReplicaAssignment(reason));
    for (expected, (&partition, replicas)) in (first_partition..).zip(assignment) {
        if partition != expected {
            return invalid(format!(
                "partitions must be numbered from {first_partition} without gaps"
            ));
        }
        if replicas.is_empty() {
            return invalid(format!("partition {partition} has no replicas"));
        }
        let mut seen = replicas.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != replicas.len() {
            return invalid(format!("partition {partition} lists a broker twice"));
        }
        if let Some(unknown) = replicas.iter().find(|r| !brokers.contains(r)) {
            return invalid(format!("broker {unknown} is not registered"));
        }
    }
    if let Some(first) = assignment.values().next() {
        if assignment.values().any(|r| r.len() != first.len()) {
            return invalid("all partitions must have the same replication factor".into());
        }
    }
    Ok(())
}

/// A new topic's id: random, as Kafka's (a re-created topic gets a new
/// one), and kept in the topic znode.
pub(super) fn new_topic_id() -> [u8; 16] {
    *uuid::Uuid::new_v4().as_bytes()
}

pub(super) fn seed_for(name: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut hasher);
    hasher.finish() ^ crate::clock::Clock::now_ms(&crate::clock::SystemClock) as u64
}
