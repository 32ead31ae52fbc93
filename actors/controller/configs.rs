//! Topic configs: written as Kafka's `AdminZkClient` writes them,
//! followed through `/config/changes`, and applied to the logs.

use super::*;
use crate::actors::replica_manager::{read_topic_configs, topic_config};
use crate::config::topic::TopicConfig;

impl Shared {
    /// The broker-wide log defaults now (dynamic ones included).
    pub(super) fn base_log_config(&self) -> LogConfig {
        self.dynamic.current().log_config()
    }

    /// Whether `topic` allows unclean leader election (its config, else
    /// the broker's `unclean.leader.election.enable`).
    pub(super) fn unclean_allowed(&self, config: &TopicConfig) -> bool {
        config
            .unclean_leader_election_enable
            .unwrap_or(self.dynamic.current().unclean_leader_election_enable)
    }

    /// `__consumer_offsets` written before compaction existed kept every
    /// record (no retention): it becomes `cleanup.policy=compact`, as Kafka
    /// creates it, so loading reads only what compaction keeps.
    pub(super) async fn make_offsets_topic_compacted(
        &self,
        configs: &mut BTreeMap<String, String>,
    ) -> Result<(), ControllerError> {
        if configs.get("cleanup.policy").map(String::as_str) == Some("compact") {
            return Ok(());
        }
        configs.insert("cleanup.policy".into(), "compact".into());
        configs.remove("retention.ms");
        configs.remove("retention.bytes");
        self.write_topic_configs(crate::group::OFFSETS_TOPIC, configs)
            .await?;
        log::info!(
            "{} is now cleanup.policy=compact (it kept every record before)",
            crate::group::OFFSETS_TOPIC
        );
        Ok(())
    }

    /// Replace `/config/topics/<name>` (created when missing).
    pub(super) async fn write_topic_configs(
        &self,
        name: &str,
        configs: &BTreeMap<String, String>,
    ) -> Result<(), ControllerError> {
        let path = ConfigEntityZNode::path(ConfigType::Topic, name);
        let data = ConfigEntityZNode::encode(configs);
        match self.store.set(&path, data.clone(), None).await {
            Ok(_) => Ok(()),
            Err(MetadataError::NoNode(_)) => Ok(self
                .store
                .create_recursive(&path, data, CreateMode::Persistent)
                .await?),
            Err(e) => Err(e.into()),
        }
    }

    pub(super) async fn topic_configs(
        &self,
        name: &str,
    ) -> Result<BTreeMap<String, String>, ControllerError> {
        read_topic_configs(self.store.as_ref(), name).await
    }

    /// A topic's typed config: `configs` over the broker's log defaults.
    pub(super) fn topic_config_for(
        &self,
        configs: &BTreeMap<String, String>,
    ) -> Result<TopicConfig, ControllerError> {
        topic_config(&self.base_log_config(), configs)
    }

    /// Any broker alters a topic's configs as Kafka's `AdminZkClient`
    /// does: write `/config/topics/<topic>`, apply it here at once (so a
    /// DescribeConfigs that follows sees it), then leave a
    /// `/config/changes` notification that every other broker follows.
    pub(super) async fn alter_configs(
        &self,
        request: AlterTopicConfigs,
    ) -> Result<(), ControllerError> {
        let name = request.name;
        if !self.has_topic(&name) {
            return Err(ControllerError::UnknownTopic(name));
        }
        self.topic_config_for(&request.configs)?;
        if request.validate_only {
            return Ok(());
        }
        self.write_topic_configs(&name, &request.configs).await?;
        self.apply_topic_configs(&name).await?;
        let notification = self
            .store
            .create_sequential(
                ConfigChangeNotification::PREFIX,
                ConfigChangeNotification::encode_topic(&name),
            )
            .await?;
        self.note_config_change(&notification);
        Ok(())
    }

    /// Kafka's `AdminZkClient.changeBrokerConfig` from any broker: writes
    /// `/config/brokers/<id>` (or `<default>`) with `configs`, applies it
    /// here at once, and leaves a `/config/changes` notification every
    /// other broker follows. Refused (INVALID_REQUEST) when a key cannot
    /// change without a restart, a value is invalid, or `broker` is
    /// another broker (Kafka sends a broker's configs to that broker).
    pub(super) async fn alter_broker_configs(
        &self,
        request: AlterBrokerConfigs,
    ) -> Result<(), ControllerError> {
        if let Some(id) = request.broker {
            if id != self.broker_id {
                return Err(ControllerError::InvalidRequest(format!(
                    "Unexpected broker id, expected {} or empty string, but received {id}",
                    self.broker_id
                )));
            }
        }
        let mut layers = self.read_dynamic_layers().await?;
        match request.broker {
            Some(_) => layers.per_broker = request.configs.clone(),
            None => layers.cluster_default = request.configs.clone(),
        }
        self.dynamic.try_layers(&layers)?;
        if request.validate_only {
            return Ok(());
        }
        let entity = request
            .broker
            .map_or_else(|| DEFAULT_BROKER_ENTITY.to_string(), |id| id.to_string());
        let path = ConfigEntityZNode::path(ConfigType::Broker, &entity);
        let data = ConfigEntityZNode::encode(&request.configs);
        match self.store.set(&path, data.clone(), None).await {
            Ok(_) => {}
            Err(MetadataError::NoNode(_)) => {
                self.store
                    .create_recursive(&path, data, CreateMode::Persistent)
                    .await?
            }
            Err(e) => return Err(e.into()),
        }
        log::info!(
            "dynamic broker configs of {entity} set to {:?}",
            request.configs
        );
        self.load_dynamic_broker_configs().await?;
        let notification = self
            .store
            .create_sequential(
                ConfigChangeNotification::PREFIX,
                ConfigChangeNotification::encode(ConfigType::Broker, &entity),
            )
            .await?;
        self.note_config_change(&notification);
        Ok(())
    }

    /// `/config/brokers/<default>` and `/config/brokers/<this id>` as the
    /// store holds them (absent: no dynamic configs).
    pub(super) async fn read_dynamic_layers(&self) -> Result<DynamicLayers, ControllerError> {
        let mut layers = DynamicLayers::default();
        for (entity, layer) in [
            (
                DEFAULT_BROKER_ENTITY.to_string(),
                &mut layers.cluster_default,
            ),
            (self.broker_id.to_string(), &mut layers.per_broker),
        ] {
            let path = ConfigEntityZNode::path(ConfigType::Broker, &entity);
            if let Some((bytes, _)) = self.store.get(&path).await? {
                *layer = ConfigEntityZNode::decode(ConfigType::Broker, &entity, &bytes)?;
            }
        }
        Ok(layers)
    }

    /// Takes the dynamic broker configs from the store; when the log
    /// defaults changed, every topic known here gets its log config again
    /// (its own overrides still win). Layers the broker cannot take (a
    /// key another tool wrote that cannot change at run time) are logged
    /// and leave the config as it was, as Kafka does.
    pub(super) async fn load_dynamic_broker_configs(&self) -> Result<(), ControllerError> {
        let layers = self.read_dynamic_layers().await?;
        match self.dynamic.set_layers(layers) {
            Ok(false) => Ok(()),
            Ok(true) => {
                let names: Vec<String> = self.cache.read(|m| m.topics.keys().cloned().collect());
                for name in names {
                    self.apply_topic_configs(&name).await?;
                }
                Ok(())
            }
            Err(e) => {
                log::error!("dynamic broker configs in the metadata store not applied: {e}");
                Ok(())
            }
        }
    }

    /// Reads a topic's configs from the store and applies them: the
    /// partition actors led here and the metadata cache.
    pub(super) async fn apply_topic_configs(&self, name: &str) -> Result<(), ControllerError> {
        let Some(topic) = self.cache.topic(name) else {
            return Ok(());
        };
        let configs = self.topic_configs(name).await?;
        let config = self.topic_config_for(&configs)?;
        for &index in topic.partitions.keys() {
            if let Some(handle) = self
                .partitions
                .registry
                .get(&TopicPartition::new(name, index))
            {
                handle
                    .addr
                    .send(UpdateConfig {
                        config: config.clone(),
                    })
                    .await
                    .map_err(|_| ControllerError::Stopped)??;
            }
        }
        self.cache.update(|m| {
            if let Some(t) = m.topics.get_mut(name) {
                t.configs = configs.clone();
                t.config = config.clone();
            }
        });
        // The active controller's own view, for what it sends next.
        if let Some(mut known) = self.context(|c| c.topic(name).cloned()) {
            known.configs = configs;
            known.config = config;
            self.remember(known);
        }
        self.partitions
            .events
            .publish(BrokerEvent::TopicConfigChanged {
                topic: name.to_owned(),
            });
        Ok(())
    }

    /// Remembers the newest notification handled, so older ones are not
    /// applied again.
    pub(super) fn note_config_change(&self, path: &str) {
        if let Some(seq) = ConfigChangeNotification::sequence(path) {
            self.config_changes_seen
                .fetch_max(seq, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// `/config/changes` changed: apply the notifications newer than the
    /// last one handled (Kafka's `ZkNodeChangeNotificationListener`).
    pub(super) async fn config_changed(
        &self,
        change: ConfigChanged,
    ) -> Result<(), ControllerError> {
        let seen = self
            .config_changes_seen
            .load(std::sync::atomic::Ordering::SeqCst);
        let mut fresh: Vec<(i64, String)> = change
            .names
            .iter()
            .filter_map(|name| {
                let seq = ConfigChangeNotification::sequence(name)?;
                (seq > seen).then(|| (seq, name.clone()))
            })
            .collect();
        fresh.sort();
        for (seq, name) in fresh {
            let path = format!("{}/{name}", ConfigEntityChangeNotificationZNode::PATH);
            if let Some((bytes, _)) = self.store.get(&path).await? {
                match ConfigChangeNotification::decode(&path, &bytes) {
                    Ok(Some((ConfigType::Topic, topic))) => {
                        self.apply_topic_configs(&topic).await?
                    }
                    Ok(Some((ConfigType::Broker, entity)))
                        if entity == DEFAULT_BROKER_ENTITY
                            || entity == self.broker_id.to_string() =>
                    {
                        self.load_dynamic_broker_configs().await?
                    }
                    Ok(Some((config_type, entity))) => {
                        if let Some(quota_entity) =
                            crate::quota::entity::QuotaEntity::from_notification(
                                config_type,
                                &entity,
                            )
                        {
                            self.client_quotas.reload(&quota_entity).await?
                        }
                    }
                    Ok(None) => {}
                    Err(e) => log::warn!("{e}"),
                }
            }
            self.config_changes_seen
                .fetch_max(seq, std::sync::atomic::Ordering::SeqCst);
        }
        // The controller keeps the newest notifications only (Kafka purges
        // by age); brokers read configs fresh at start, so none is lost.
        if self.is_active() && change.names.len() > KEPT_CONFIG_CHANGES {
            let mut names = change.names.clone();
            names.sort_by_key(|n| ConfigChangeNotification::sequence(n).unwrap_or(-1));
            for name in &names[..names.len() - KEPT_CONFIG_CHANGES] {
                let path = format!("{}/{name}", ConfigEntityChangeNotificationZNode::PATH);
                match self.store.delete(&path, None).await {
                    Ok(()) | Err(MetadataError::NoNode(_)) => {}
                    Err(e) => log::warn!("cannot purge {path}: {e}"),
                }
            }
        }
        Ok(())
    }
}
