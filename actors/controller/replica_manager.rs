//! The broker side of the controller's requests (Kafka's ReplicaManager):
//! LeaderAndIsr, UpdateMetadata and StopReplica fenced by epoch and
//! applied here: partition actors and replica fetchers started and
//! stopped, logs found, created or deleted, the metadata cache updated.
//! The active controller's decisions about its own broker take the same
//! path (`apply_local`).

use super::*;

impl Shared {
    /// Stops this broker's replica of `tp`, if it has one (deletion,
    /// StopReplica, shutdown). Says whether there was one.
    pub(super) fn stop_leading(&self, tp: &TopicPartition) -> bool {
        self.fetchers.unfollow(tp);
        let Some(handle) = self.partitions.registry.remove(tp) else {
            return false;
        };
        handle.addr.do_send(StopPartition);
        self.note_leadership(tp, false, -1);
        true
    }

    /// Deletes `tp`'s log here; a log that is already gone counts as
    /// deleted. `Ok(false)`: the deletion failed (logged).
    pub(super) async fn delete_log(&self, tp: &TopicPartition) -> Result<bool, ControllerError> {
        match self.log.delete.send(DeleteLog { tp: tp.clone() }).await {
            Ok(Ok(())) | Ok(Err(LogActorError::UnknownPartition(_))) => Ok(true),
            Ok(Err(e)) => {
                log::error!("deleting the log of {tp} failed: {e}");
                Ok(false)
            }
            Err(_) => Err(ControllerError::Stopped),
        }
    }

    /// Makes this broker's replicas of `topic`'s partitions `indexes` what
    /// their states say (the one place both the active controller's own
    /// decisions and a LeaderAndIsr from it land): finds or creates their
    /// logs, starts or re-assigns their partition actors, publishes
    /// leadership changes, and starts or stops the replica fetchers.
    /// `addresses` names leaders the metadata cache may not know yet
    /// (LeaderAndIsr's live leaders). Answers an error code per partition.
    pub(super) async fn apply_local(
        &self,
        topic: &TopicMetadata,
        indexes: &[i32],
        addresses: &BTreeMap<i32, String>,
    ) -> Result<Vec<(i32, i16)>, ControllerError> {
        let mine: Vec<(TopicPartition, PartitionMetadata)> = indexes
            .iter()
            .filter_map(|index| {
                let p = topic.partitions.get(index)?;
                (p.replicas.contains(&self.broker_id) || p.leader == self.broker_id)
                    .then(|| (TopicPartition::new(topic.name.clone(), *index), p.clone()))
            })
            .collect();
        // Find or create the logs of replicas new here a few at a time:
        // faster than one after another, without filling the shards'
        // queues so that other partitions' appends wait behind a creation.
        let missing = mine
            .iter()
            .filter(|(tp, _)| self.partitions.registry.get(tp).is_none())
            .map(|(tp, _)| {
                let log = self.log.clone();
                let config = topic.log_config.clone();
                let tp = tp.clone();
                let topic_id = topic.topic_id;
                async move {
                    (
                        tp.clone(),
                        find_or_create_log(&log, tp, config, topic_id).await,
                    )
                }
            });
        use futures_util::StreamExt;
        let mut found: HashMap<TopicPartition, Result<LogOffsets, ControllerError>> =
            futures_util::stream::iter(missing)
                .buffer_unordered(LOG_CREATION_CONCURRENCY)
                .collect()
                .await;
        let mut codes = Vec::with_capacity(mine.len());
        // A new partition's first act is to record its leader epoch on its
        // shard, with an fsync. Started all at once, thousands of those
        // would queue ahead of other partitions' appends on the same
        // shards (a 2,000-partition creation stalled a producer for over a
        // second); a few at a time, appends interleave with them.
        let mut starting = futures_util::stream::FuturesUnordered::new();
        for (tp, p) in mine {
            let assignment = PartitionAssignment {
                leader: p.leader,
                leader_epoch: p.leader_epoch,
                isr: p.isr.clone(),
                replicas: p.replicas.clone(),
                zk_version: p.zk_version,
                controller_epoch: self.controller_epoch(),
            };
            let (handle, offsets) = match found.remove(&tp) {
                None => {
                    let Some(handle) = self.partitions.registry.get(&tp) else {
                        continue;
                    };
                    match handle.addr.send(ApplyAssignment(assignment)).await {
                        Ok(Ok(offsets)) => (handle, offsets),
                        Ok(Err(e)) => {
                            log::warn!("partition {tp}: assignment refused: {e}");
                            // Kafka answers a stale leader epoch so.
                            let code = match e {
                                LogActorError::Replication(
                                    ReplicationError::FencedLeaderEpoch { .. },
                                ) => ResponseError::StaleControllerEpoch.code(),
                                e => crate::api::error_code(&e),
                            };
                            codes.push((tp.partition, code));
                            continue;
                        }
                        Err(_) => {
                            codes.push((tp.partition, ResponseError::KafkaStorageError.code()));
                            continue;
                        }
                    }
                }
                Some(Ok(offsets)) => {
                    let handle = self.partitions.start(&tp, offsets, assignment);
                    let addr = handle.addr.clone();
                    // Answered once its start-up (`ctx.wait`) is done.
                    starting.push(async move {
                        let _ = addr.send(GetState).await;
                    });
                    if starting.len() >= LOG_CREATION_CONCURRENCY {
                        starting.next().await;
                    }
                    (handle, offsets)
                }
                Some(Err(ControllerError::Log(
                    e @ LogActorError::Log(crate::storage::LogError::InconsistentTopicId { .. }),
                ))) => {
                    // Kafka refuses the partition and keeps the files for
                    // the operator: they are another topic's records.
                    log::error!("partition {tp} is not taken up here: {e}");
                    codes.push((tp.partition, ResponseError::InconsistentTopicId.code()));
                    continue;
                }
                Some(Err(ControllerError::Log(e @ LogActorError::PartitionOffline { .. }))) => {
                    // A log that cannot be read: this partition stays
                    // offline here, the rest are served.
                    log::error!("partition {tp} stays offline: {e}");
                    codes.push((tp.partition, ResponseError::KafkaStorageError.code()));
                    continue;
                }
                Some(Err(e)) => return Err(e),
            };
            self.note_leadership(&tp, p.leader == self.broker_id, p.leader_epoch);
            if p.leader == self.broker_id || p.leader < 0 {
                self.fetchers.unfollow(&tp);
            } else {
                match self.address_of(p.leader, addresses) {
                    Some(address) => self.fetchers.follow(
                        &tp,
                        p.leader,
                        address,
                        p.leader_epoch,
                        handle,
                        offsets,
                    ),
                    None => log::warn!(
                        "partition {tp}: leader {} has no known address; not fetching yet",
                        p.leader
                    ),
                }
            }
            codes.push((tp.partition, 0));
        }
        while starting.next().await.is_some() {}
        Ok(codes)
    }

    /// `host:port` of broker `id`.
    pub(super) fn address_of(&self, id: i32, addresses: &BTreeMap<i32, String>) -> Option<String> {
        addresses.get(&id).cloned().or_else(|| {
            self.cache
                .read(|m| m.brokers.get(&id).map(|b| format!("{}:{}", b.host, b.port)))
        })
    }

    /// Publishes LeadershipGained/LeadershipLost when this broker's role
    /// for `tp` changed.
    pub(super) fn note_leadership(&self, tp: &TopicPartition, leads: bool, leader_epoch: i32) {
        let changed = {
            let mut led = self.led.lock().unwrap_or_else(|p| p.into_inner());
            if leads {
                led.insert(tp.clone())
            } else {
                led.remove(tp)
            }
        };
        if !changed {
            return;
        }
        let event = if leads {
            BrokerEvent::LeadershipGained {
                tp: tp.clone(),
                leader_epoch,
            }
        } else {
            BrokerEvent::LeadershipLost { tp: tp.clone() }
        };
        self.partitions.events.publish(event);
    }

    /// A control request from a controller: fenced by epoch (Kafka's
    /// STALE_CONTROLLER_EPOCH and KIP-380's STALE_BROKER_EPOCH). An active
    /// controller steps down for a newer epoch only once
    /// `/controller_epoch` confirms it: a forged or confused request must
    /// not leave `/controller` held by a broker that no longer acts on it.
    pub(super) async fn fence(
        &self,
        controller_id: i32,
        controller_epoch: i32,
        broker_epoch: i64,
    ) -> Result<(), i16> {
        use kafka_protocol::error::ResponseError as E;
        let role = self.role();
        if controller_epoch < role.controller_epoch {
            log::warn!(
                "ignoring a control request from controller {controller_id} with epoch {controller_epoch} \
                 (newest seen: {})",
                role.controller_epoch
            );
            return Err(E::StaleControllerEpoch.code());
        }
        if broker_epoch != -1 && broker_epoch < role.broker_epoch {
            return Err(E::StaleBrokerEpoch.code());
        }
        if role.active {
            // Without ZooKeeper there is no other broker to be controller.
            if controller_epoch <= role.controller_epoch || self.config.zookeeper_connect.is_none()
            {
                // No other controller of this epoch or older can exist
                // while this broker holds it: forged or stale.
                log::warn!(
                    "ignoring a control request from broker {controller_id}: this broker is the controller"
                );
                return Err(E::StaleControllerEpoch.code());
            }
            let stored = match self.store.get(ControllerEpochZNode::path()).await {
                Ok(Some((bytes, _))) => ControllerEpochZNode::decode(&bytes).ok(),
                _ => None,
            };
            if stored.is_none_or(|stored| stored < controller_epoch) {
                log::warn!(
                    "ignoring a control request from broker {controller_id} with controller epoch \
                     {controller_epoch}: /controller_epoch says {stored:?}, and this broker is the \
                     controller"
                );
                return Err(E::StaleControllerEpoch.code());
            }
            // A newer controller was elected: this broker's claim went
            // with a session it has not yet seen expire (a pause longer
            // than the session timeout). Step down now; the session
            // handler registers again.
            log::warn!(
                "broker {controller_id} is the controller with epoch {controller_epoch}: \
                 this broker (epoch {}) steps down",
                role.controller_epoch
            );
            self.set_role(|r| r.active = false);
        }
        self.set_role(|r| r.controller_epoch = r.controller_epoch.max(controller_epoch));
        self.cache.update(|m| m.controller_id = controller_id);
        Ok(())
    }

    pub(super) async fn apply_leader_and_isr(
        &self,
        request: ApplyLeaderAndIsr,
    ) -> Result<LeaderAndIsrResponse, ControllerError> {
        let request = request.0;
        if let Err(code) = self
            .fence(
                request.controller_id.0,
                request.controller_epoch,
                request.broker_epoch,
            )
            .await
        {
            return Ok(LeaderAndIsrResponse::default().with_error_code(code));
        }
        let addresses: BTreeMap<i32, String> = request
            .live_leaders
            .iter()
            .map(|l| (l.broker_id.0, format!("{}:{}", l.host_name, l.port)))
            .collect();
        let mut topics = Vec::new();
        for topic in request.topic_states {
            let name = topic.topic_name.0.to_string();
            let (configs, log_config) = match self.cache.topic(&name) {
                Some(known) => (known.configs, known.log_config),
                None => {
                    let configs = self.topic_configs(&name).await?;
                    let log_config = self.log_config_for(&configs)?;
                    (configs, log_config)
                }
            };
            let partitions: BTreeMap<i32, PartitionMetadata> = topic
                .partition_states
                .iter()
                .map(|p| {
                    (
                        p.partition_index,
                        PartitionMetadata {
                            leader: p.leader.0,
                            leader_epoch: p.leader_epoch,
                            replicas: p.replicas.iter().map(|b| b.0).collect(),
                            isr: p.isr.iter().map(|b| b.0).collect(),
                            zk_version: p.partition_epoch,
                        },
                    )
                })
                .collect();
            let indexes: Vec<i32> = partitions.keys().copied().collect();
            let metadata = TopicMetadata {
                name: name.clone(),
                topic_id: *topic.topic_id.as_bytes(),
                is_internal: is_internal_topic(&name),
                partitions,
                configs,
                log_config,
            };
            let codes = self.apply_local(&metadata, &indexes, &addresses).await?;
            topics.push(
                LeaderAndIsrTopicError::default()
                    .with_topic_id(topic.topic_id)
                    .with_partition_errors(
                        codes
                            .into_iter()
                            .map(|(index, code)| {
                                LeaderAndIsrPartitionError::default()
                                    .with_partition_index(index)
                                    .with_error_code(code)
                            })
                            .collect(),
                    ),
            );
        }
        Ok(LeaderAndIsrResponse::default().with_topics(topics))
    }

    pub(super) async fn apply_update_metadata(
        &self,
        request: ApplyUpdateMetadata,
    ) -> Result<UpdateMetadataResponse, ControllerError> {
        let request = request.0;
        if let Err(code) = self
            .fence(
                request.controller_id.0,
                request.controller_epoch,
                request.broker_epoch,
            )
            .await
        {
            return Ok(UpdateMetadataResponse::default().with_error_code(code));
        }
        let brokers: BTreeMap<i32, BrokerEndpoint> = request
            .live_brokers
            .iter()
            .filter_map(|b| {
                let endpoint = b.endpoints.first()?;
                Some((
                    b.id.0,
                    BrokerEndpoint {
                        id: b.id.0,
                        host: endpoint.host.to_string(),
                        port: u16::try_from(endpoint.port).ok()?,
                        rack: b.rack.as_ref().map(|r| r.to_string()),
                    },
                ))
            })
            .collect();
        self.cache.update(|m| m.brokers = brokers);
        for topic in request.topic_states {
            let name = topic.topic_name.0.to_string();
            if topic
                .partition_states
                .iter()
                .any(|p| p.leader.0 == LEADER_DURING_DELETE)
            {
                self.cache.update(|m| m.topics.remove(&name));
                continue;
            }
            let known = self.cache.topic(&name);
            let (configs, log_config) = match &known {
                Some(t) => (t.configs.clone(), t.log_config.clone()),
                None => {
                    let configs = self.topic_configs(&name).await?;
                    let log_config = self.log_config_for(&configs)?;
                    (configs, log_config)
                }
            };
            let mut partitions = known.map(|t| t.partitions).unwrap_or_default();
            for p in topic.partition_states {
                partitions.insert(
                    p.partition_index,
                    PartitionMetadata {
                        leader: p.leader.0,
                        leader_epoch: p.leader_epoch,
                        replicas: p.replicas.iter().map(|b| b.0).collect(),
                        isr: p.isr.iter().map(|b| b.0).collect(),
                        zk_version: p.zk_version,
                    },
                );
            }
            let metadata = TopicMetadata {
                name: name.clone(),
                topic_id: *topic.topic_id.as_bytes(),
                is_internal: is_internal_topic(&name),
                partitions,
                configs,
                log_config,
            };
            self.cache.update(|m| m.topics.insert(name, metadata));
        }
        Ok(UpdateMetadataResponse::default())
    }

    pub(super) async fn apply_stop_replica(
        &self,
        request: ApplyStopReplica,
    ) -> Result<StopReplicaResponse, ControllerError> {
        let request = request.0;
        if let Err(code) = self
            .fence(
                request.controller_id.0,
                request.controller_epoch,
                request.broker_epoch,
            )
            .await
        {
            return Ok(StopReplicaResponse::default().with_error_code(code));
        }
        let mut errors = Vec::new();
        for topic in request.topic_states {
            let name = topic.topic_name.0.to_string();
            for p in topic.partition_states {
                let tp = TopicPartition::new(name.clone(), p.partition_index);
                self.stop_leading(&tp);
                let code = if p.delete_partition && !self.delete_log(&tp).await? {
                    kafka_protocol::error::ResponseError::KafkaStorageError.code()
                } else {
                    0
                };
                errors.push(
                    StopReplicaPartitionError::default()
                        .with_topic_name(TopicName(StrBytes::from_string(name.clone())))
                        .with_partition_index(p.partition_index)
                        .with_error_code(code),
                );
            }
        }
        Ok(StopReplicaResponse::default().with_partition_errors(errors))
    }
}
