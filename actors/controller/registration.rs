//! This broker's part in the controller election: its role and epoch,
//! the election as one transaction, taking up and resigning the role, and
//! the controller-epoch check every controller write carries.

use super::*;

impl Shared {
    /// Reads the controller context.
    pub(super) fn context<T>(&self, read: impl FnOnce(&ControllerContext) -> T) -> T {
        read(&self.context.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Changes the controller context; a role change is told to the
    /// replica manager, which fences the control requests (this broker's
    /// own controller's among them) with it. Sent before any later request
    /// of this controller's, in order.
    pub(super) fn update_context<T>(&self, change: impl FnOnce(&mut ControllerContext) -> T) -> T {
        let (answer, before, after) = {
            let mut context = self.context.lock().unwrap_or_else(|p| p.into_inner());
            let before = context.role;
            let answer = change(&mut context);
            (answer, before, context.role)
        };
        if before != after {
            self.replica_manager.do_send(LocalControllerRole {
                broker_epoch: after.broker_epoch,
                active_epoch: after.active.then_some(after.controller_epoch),
            });
        }
        answer
    }

    pub(super) fn role(&self) -> Role {
        self.context(|c| c.role)
    }

    pub(super) fn set_role(&self, change: impl FnOnce(&mut Role)) {
        self.update_context(|c| change(&mut c.role))
    }

    pub(super) fn is_active(&self) -> bool {
        self.role().active
    }

    /// Gives the role up in the context (what this term knew goes too).
    pub(super) fn step_down(&self) {
        self.update_context(|c| c.resign());
    }

    /// A topic as the controller knows it: the active controller's own
    /// view; on another broker, which writes topics to the store as
    /// Kafka's AdminZkClient does, the broker's metadata cache.
    pub(super) fn topic(&self, name: &str) -> Option<TopicMetadata> {
        match self.context(|c| c.role.active.then(|| c.topic(name).cloned())) {
            Some(known) => known,
            None => self.cache.topic(name),
        }
    }

    pub(super) fn has_topic(&self, name: &str) -> bool {
        self.topic(name).is_some()
    }

    /// Every topic the active controller knows.
    pub(super) fn all_topics(&self) -> Vec<TopicMetadata> {
        self.context(|c| c.topics().cloned().collect())
    }

    /// The active controller takes `topic` as it now is. Brokers, this one
    /// among them, hear of it through `publish`/`propagate`.
    pub(super) fn remember(&self, topic: TopicMetadata) {
        self.update_context(|c| c.put_topic(topic));
    }

    pub(super) fn forget(&self, name: &str) -> Option<TopicMetadata> {
        self.update_context(|c| c.remove_topic(name))
    }

    /// The live brokers' endpoints: the active controller's view, else the
    /// broker's metadata cache.
    pub(super) fn live_endpoints(&self) -> BTreeMap<i32, BrokerEndpoint> {
        match self.context(|c| c.role.active.then(|| c.endpoints().clone())) {
            Some(endpoints) => endpoints,
            None => self.cache.read(|m| m.brokers.clone()),
        }
    }

    pub(super) fn shutting_down(&self) -> std::collections::BTreeSet<i32> {
        self.context(|c| c.shutting_down())
    }

    pub(super) fn controller_epoch(&self) -> i32 {
        self.role().controller_epoch
    }

    /// The broker id in `/controller`, -1 when nobody holds it.
    pub(super) async fn controller_holder(&self) -> Result<i32, ControllerError> {
        Ok(match self.store.get(ControllerZNode::path()).await? {
            Some((bytes, _)) => ControllerZNode::decode(&bytes)?,
            None => -1,
        })
    }

    /// Takes `holder` as the controller, and its endpoint from its
    /// registration when the cache does not list it yet (a joining broker,
    /// before the controller's first UpdateMetadata): clients are then
    /// told of a controller they can reach, as Kafka's broker reads the
    /// controller's registration for its own controlled shutdown. A
    /// registration that cannot be read leaves the controller unnamed
    /// (`advertised_controller_id`) until UpdateMetadata lists it.
    pub(super) async fn learn_controller(&self, holder: i32) {
        let known = self.cache.read(|m| m.brokers.contains_key(&holder));
        let endpoint = if known || holder < 0 {
            None
        } else {
            match self.registration_of(holder).await {
                Ok(registered) => registered.map(|(endpoint, _)| endpoint),
                Err(e) => {
                    log::warn!("controller {holder}'s registration cannot be read: {e}");
                    None
                }
            }
        };
        self.cache.update(|m| {
            m.controller_id = holder;
            if let Some(endpoint) = endpoint {
                m.brokers.entry(holder).or_insert(endpoint);
            }
        });
    }

    /// Takes up the controller role with `epoch`: learns the live brokers,
    /// finishes interrupted deletions, takes up every topic (electing
    /// leaders for partitions whose leader is gone) and tells every other
    /// broker the whole state. Any failure on the way resigns (Kafka's
    /// `triggerControllerMove`): `/controller` is given up so that a
    /// broker that can do the work is elected, rather than held by one
    /// that is not an active controller.
    pub(super) async fn activate(
        &self,
        epoch: i32,
        epoch_zk_version: i32,
    ) -> Result<(), ControllerError> {
        // A new term starts from the store: every deletion over from its
        // mark, the brokers from their registrations.
        self.update_context(|c| c.activate(epoch, epoch_zk_version));
        self.cache.update(|m| m.controller_id = self.broker_id);
        let activated = async {
            self.load_brokers().await?;
            self.finish_pending_deletions().await?;
            self.load_topics().await?;
            Ok::<_, ControllerError>(())
        }
        .await;
        if let Err(e) = activated {
            self.resign(&format!("taking up the controller role failed: {e}"))
                .await;
            return Err(e);
        }
        // This broker hears of everything as the others do.
        let topics = self.all_topics();
        if let Err(e) = self.publish_locally(&topics).await {
            self.resign(&format!("publishing the metadata here failed: {e}"))
                .await;
            return Err(e);
        }
        for broker in self.remote_brokers() {
            self.send_topics_to(broker, &topics);
        }
        Ok(())
    }

    /// Stops being the controller and gives `/controller` up when this
    /// session still holds it at this controller's epoch (one transaction
    /// that checks `/controller_epoch`, so a successor's claim is never
    /// deleted). The `/controller` watch of every broker then elects again.
    pub(super) async fn resign(&self, reason: &str) {
        let role = self.role();
        self.step_down();
        self.cache.update(|m| m.controller_id = -1);
        log::warn!(
            "broker {} resigns as controller (epoch {}): {reason}",
            self.broker_id,
            role.controller_epoch
        );
        let Ok(Some((_, stat))) = self.store.get(ControllerZNode::path()).await else {
            return;
        };
        if stat.ephemeral_owner != self.store.session_id() || role.epoch_zk_version < 0 {
            return;
        }
        let give_up = vec![
            StoreOp::Check {
                path: ControllerEpochZNode::path().to_owned(),
                version: role.epoch_zk_version,
            },
            StoreOp::Delete {
                path: ControllerZNode::path().to_owned(),
                expected_version: None,
            },
        ];
        if let Err(e) = self.store.multi(give_up).await {
            log::warn!("giving up {}: {e}", ControllerZNode::path());
        }
    }

    /// A controller write: `ops` in one transaction with a check that
    /// `/controller_epoch` is still at the version this controller wrote
    /// (Kafka's `wrapRequestWithControllerEpochCheck`). A failed check
    /// means a successor exists: this controller resigns and the write is
    /// not made. Returns each op's stat, as `multi` does.
    pub(super) async fn controller_write(
        &self,
        ops: Vec<StoreOp>,
    ) -> Result<Vec<Stat>, ControllerError> {
        let role = self.role();
        if !role.active {
            return Err(ControllerError::NotController);
        }
        let mut fenced = Vec::with_capacity(ops.len() + 1);
        fenced.push(StoreOp::Check {
            path: ControllerEpochZNode::path().to_owned(),
            version: role.epoch_zk_version,
        });
        fenced.extend(ops);
        match self.store.multi(fenced).await {
            Ok(mut stats) => {
                if !stats.is_empty() {
                    stats.remove(0);
                }
                Ok(stats)
            }
            Err(MetadataError::BadVersion { path, .. }) if path == ControllerEpochZNode::path() => {
                self.step_down();
                log::warn!(
                    "broker {}: /controller_epoch moved past epoch {}; another controller was \
                     elected, this one stops",
                    self.broker_id,
                    role.controller_epoch
                );
                Err(ControllerError::ControllerMoved {
                    epoch: role.controller_epoch,
                })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Standby: `/controller` is empty; run for it.
    pub(super) async fn try_elect(
        &self,
        registration: Registration,
    ) -> Result<bool, ControllerError> {
        let role = self.role();
        if role.active || role.registering {
            return Ok(false);
        }
        match registration.elect(self.store.as_ref()).await? {
            Some((epoch, epoch_zk_version)) => {
                log::info!(
                    "broker {} is the controller (epoch {epoch})",
                    self.broker_id
                );
                self.activate(epoch, epoch_zk_version).await?;
                Ok(true)
            }
            None => {
                let holder = self.controller_holder().await?;
                self.learn_controller(holder).await;
                Ok(false)
            }
        }
    }
}

impl Registration {
    pub(super) fn new(config: &BrokerConfig, advertised: &AdvertisedEndpoint) -> Registration {
        let broker_id = config.broker_id.max(0);
        let plaintext = advertised
            .listeners
            .iter()
            .find(|l| l.security_protocol == crate::config::SecurityProtocol::Plaintext);
        let bracket = |host: &str| {
            if host.contains(':') && !host.starts_with('[') {
                format!("[{host}]")
            } else {
                host.to_string()
            }
        };
        Registration {
            broker_id,
            info: BrokerInfo {
                id: broker_id,
                // Kafka's top-level host/port: the first PLAINTEXT endpoint.
                host: plaintext.map_or(String::new(), |l| l.host.clone()),
                port: plaintext.map_or(-1, |l| l.port as i32),
                endpoints: advertised
                    .listeners
                    .iter()
                    .map(|l| format!("{}://{}:{}", l.name, bracket(&l.host), l.port))
                    .collect(),
                protocols: advertised
                    .listeners
                    .iter()
                    .map(|l| (l.name.clone(), l.security_protocol.name().to_string()))
                    .collect(),
                rack: config.broker_rack.clone(),
                timestamp_ms: 0,
            },
            wait: match config.zookeeper_connect {
                // ZooKeeper notices a dead session within its timeout.
                Some(_) => std::time::Duration::from_millis(
                    config.zookeeper_session_timeout_ms.saturating_add(2_000),
                ),
                // The embedded store drops every ephemeral znode at open.
                None => std::time::Duration::ZERO,
            },
        }
    }

    /// Registers the broker; its epoch is the registration's creation
    /// zxid (KIP-380).
    pub(super) async fn register(&self, store: &dyn MetadataStore) -> Result<i64, ControllerError> {
        let broker_id = self.broker_id;
        let now_ms = crate::clock::Clock::now_ms(&crate::clock::SystemClock);
        let info = BrokerInfo {
            timestamp_ms: now_ms,
            ..self.info.clone()
        };
        let registered = claim_ephemeral(
            store,
            &BrokerIdZNode::path(broker_id),
            &BrokerIdZNode::encode(&info),
            self.wait,
        )
        .await
        .map_err(|e| match e {
            ClaimError::HeldByAnother { owner, .. } => {
                ControllerError::DuplicateBrokerId { broker_id, owner }
            }
            ClaimError::Store(e) => ControllerError::Store(e),
        })?;
        Ok(registered.creation_zxid)
    }

    /// Runs for controller as Kafka's `registerControllerAndIncrementControllerEpoch`
    /// does: one transaction creates `/controller` and moves
    /// `/controller_epoch` on from the version read, so no broker ever
    /// holds `/controller` without a new epoch, or an epoch without
    /// `/controller`. Returns the new epoch and the version it was written
    /// at; `Ok(None)` when another live broker holds the role. A claim left
    /// by this broker's own dead predecessor is waited out (one session
    /// timeout); a claim of this very session (a transaction whose reply
    /// was lost) is the win it looks like.
    pub(super) async fn elect(
        &self,
        store: &dyn MetadataStore,
    ) -> Result<Option<(i32, i32)>, ControllerError> {
        let broker_id = self.broker_id;
        let now_ms = crate::clock::Clock::now_ms(&crate::clock::SystemClock);
        let claim = ControllerZNode::encode(broker_id, now_ms);
        let deadline = std::time::Instant::now() + self.wait;
        // Bounded: each pass either wins, finds a holder, or lost a race
        // that changed what it read.
        for _ in 0..ELECTION_ATTEMPTS {
            let (epoch, epoch_version) = match store.get(ControllerEpochZNode::path()).await? {
                Some((bytes, stat)) => (ControllerEpochZNode::decode(&bytes)?, stat.version),
                // Kafka creates it at 0 first, so the first controller has 1.
                None => match store
                    .create(
                        ControllerEpochZNode::path(),
                        ControllerEpochZNode::encode(0),
                        CreateMode::Persistent,
                    )
                    .await
                {
                    Ok(()) | Err(MetadataError::NodeExists(_)) => continue,
                    Err(e) => return Err(e.into()),
                },
            };
            let gone = store.watch(ControllerZNode::path()).await?;
            if let Some((bytes, stat)) = store.get(ControllerZNode::path()).await? {
                let holder = ControllerZNode::decode(&bytes)?;
                if stat.ephemeral_owner == store.session_id() {
                    return Ok(Some((epoch, epoch_version)));
                }
                if holder != broker_id {
                    return Ok(None);
                }
                // Our own previous process: wait for its session to end.
                let now = std::time::Instant::now();
                if now >= deadline {
                    return Err(ControllerError::ControllerElsewhere {
                        owner: stat.ephemeral_owner,
                    });
                }
                let _ = tokio::time::timeout(deadline - now, gone).await;
                continue;
            }
            let ops = vec![
                StoreOp::Create {
                    path: ControllerZNode::path().to_owned(),
                    data: claim.clone(),
                    mode: CreateMode::Ephemeral,
                },
                StoreOp::Set {
                    path: ControllerEpochZNode::path().to_owned(),
                    data: ControllerEpochZNode::encode(epoch + 1),
                    expected_version: Some(epoch_version),
                },
            ];
            match store.multi(ops).await {
                Ok(stats) => {
                    let version = stats.get(1).map_or(epoch_version + 1, |s| s.version);
                    return Ok(Some((epoch + 1, version)));
                }
                // Someone else won, or the reply was lost and the retry met
                // its own writes: the next pass reads which.
                Err(MetadataError::NodeExists(_) | MetadataError::BadVersion { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(None)
    }
}
