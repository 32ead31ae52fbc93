//! The one entry point: `Broker::start(config)` brings a broker up and hands
//! back a `BrokerHandle`; `main`, the tests and `examples/` all use it.
//!
//! Start order: the log actor (loading and recovering every partition in
//! `log.dirs`), the metadata store (embedded unless `zookeeper.connect` is
//! set), the listening socket, the controller (registration, election,
//! topics, partition actors), then the acceptor and its network threads.
//! Shutdown runs the other way and ends with the clean-shutdown marker.

use std::net::SocketAddr;
use std::sync::Arc;

use actix::prelude::*;

use crate::actors::acceptor::{Acceptor, StopAccepting};
use crate::actors::controller::{AdvertisedEndpoint, Controller, StopPartitions, TopicError};
use crate::actors::group_coordinator::{CoordinatorConfig, GroupCoordinator};
use crate::actors::log::{Close, LoadedLog, LogActor, LogActorConfig, LogActorError};
use crate::actors::partition::PartitionRegistry;
use crate::api::BrokerContext;
use crate::clock::{SharedClock, SystemClock};
use crate::cluster::MetadataCache;
use crate::config::BrokerConfig;
use crate::metadata::store::{MetadataError, MetadataStore};
use crate::metadata::{EmbeddedStore, EMBEDDED_STORE_FILE_NAME};

/// Why a broker could not start or stop.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("storage: {0}")]
    Log(#[from] LogActorError),
    #[error("metadata store: {0}")]
    Metadata(#[from] MetadataError),
    #[error("controller: {0}")]
    Controller(#[from] TopicError),
    #[error("cannot listen on {address}: {source}")]
    Listen {
        address: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Config(String),
}

/// A running broker.
pub struct BrokerHandle {
    pub config: BrokerConfig,
    pub log: Addr<LogActor>,
    pub controller: Addr<Controller>,
    pub context: Arc<BrokerContext>,
    /// The address the listener is bound to (the real port when 0 was asked).
    pub bound: SocketAddr,
    /// What start-up loaded, partition by partition.
    pub loaded: Vec<LoadedLog>,
    acceptor: Addr<Acceptor>,
    network: Vec<Arbiter>,
}

pub struct Broker;

impl Broker {
    /// Start a broker on the wall clock. Must run inside an actix system.
    pub async fn start(config: BrokerConfig) -> Result<BrokerHandle, BrokerError> {
        Self::start_with_clock(config, Arc::new(SystemClock)).await
    }

    pub async fn start_with_clock(
        config: BrokerConfig,
        clock: SharedClock,
    ) -> Result<BrokerHandle, BrokerError> {
        if config.zookeeper_connect.is_some() {
            return Err(BrokerError::Config(
                "zookeeper.connect is set, but the ZooKeeper cluster mode is not built yet; \
                 remove it to run a single broker on the embedded metadata store"
                    .into(),
            ));
        }
        let (log, loaded) =
            LogActor::start(LogActorConfig::from_broker(&config), clock.clone()).await?;
        let store = open_embedded_store(&config)?;
        let listener = config
            .listeners
            .first()
            .ok_or_else(|| BrokerError::Config("listeners is empty".into()))?;
        let bind_host = if listener.host.is_empty() {
            "0.0.0.0"
        } else {
            listener.host.as_str()
        };
        let address = format!("{bind_host}:{}", listener.port);
        let socket = tokio::net::TcpListener::bind(&address)
            .await
            .map_err(|source| BrokerError::Listen {
                address: address.clone(),
                source,
            })?;
        let bound = socket
            .local_addr()
            .map_err(|source| BrokerError::Listen { address, source })?;
        let advertised = advertised_endpoint(&config, bound);
        let cache = MetadataCache::default();
        let partitions = PartitionRegistry::default();
        let controller = Controller::start(
            config.clone(),
            store,
            log.clone(),
            cache.clone(),
            partitions.clone(),
            advertised.clone(),
        )
        .await?;
        let groups = GroupCoordinator::new(
            CoordinatorConfig::from_broker(&config),
            config.broker_id.max(0),
            controller.clone(),
            partitions.clone(),
            cache.clone(),
            clock.clone(),
        )
        .start();
        let context = Arc::new(BrokerContext {
            config: config.clone(),
            broker_id: config.broker_id.max(0),
            log: log.clone(),
            controller: controller.clone(),
            groups,
            partitions,
            metadata: cache,
            clock: clock.clone(),
        });
        let network: Vec<Arbiter> = (0..config.num_network_threads.clamp(1, 64))
            .map(|_| Arbiter::new())
            .collect();
        let acceptor = Acceptor::new(
            socket,
            context.clone(),
            network.iter().map(|a| a.handle()).collect(),
        )
        .start();
        let offline = loaded.iter().filter(|l| l.offsets.is_err()).count();
        log::info!(
            "broker {} started: listening on {bound}, advertised as {}:{}, {} partition log(s) loaded, {offline} offline",
            context.broker_id,
            advertised.host,
            advertised.port,
            loaded.len(),
        );
        Ok(BrokerHandle {
            config,
            log,
            controller,
            context,
            bound,
            loaded,
            acceptor,
            network,
        })
    }
}

fn open_embedded_store(config: &BrokerConfig) -> Result<Arc<dyn MetadataStore>, BrokerError> {
    let first = config
        .log_dirs
        .first()
        .ok_or_else(|| BrokerError::Config("log.dirs is empty".into()))?;
    let store = EmbeddedStore::open(&first.join(EMBEDDED_STORE_FILE_NAME))?;
    Ok(store)
}

fn advertised_endpoint(config: &BrokerConfig, bound: SocketAddr) -> AdvertisedEndpoint {
    let listener = config
        .advertised_listeners
        .first()
        .or(config.listeners.first());
    let host = match listener.map(|l| l.host.as_str()) {
        Some(host) if !host.is_empty() && host != "0.0.0.0" && host != "::" => host.to_string(),
        _ if !bound.ip().is_unspecified() => bound.ip().to_string(),
        _ => "localhost".to_string(),
    };
    // Port 0 means "any": advertise the one the listener got.
    let port = match listener.map(|l| l.port) {
        Some(0) | None => bound.port(),
        Some(port) => port,
    };
    AdvertisedEndpoint { host, port }
}

impl BrokerHandle {
    /// Stop accepting, stop the partitions, flush every log, write the
    /// checkpoints and the clean-shutdown marker, so the next start skips
    /// recovery.
    pub async fn shutdown(self) -> Result<(), BrokerError> {
        let _ = self.acceptor.send(StopAccepting).await;
        let _ = self.controller.send(StopPartitions).await;
        self.log
            .send(Close)
            .await
            .map_err(|_| LogActorError::Stopped)??;
        for arbiter in &self.network {
            arbiter.stop();
        }
        log::info!("broker {} shut down cleanly", self.context.broker_id);
        Ok(())
    }
}
