//! The one entry point: `Broker::builder(config)` (with optional
//! extensions and clock) `.start()` brings a broker up and hands back a
//! `BrokerHandle`; `main`, the tests and `examples/` all use it
//! (`Broker::start(config)` is the builder with nothing added).
//!
//! Start order: the log manager (loading and recovering every partition in
//! `log.dirs`), the metadata store (embedded unless `zookeeper.connect` is
//! set), the listening socket, the controller (registration, election,
//! topics, partition actors), the group coordinator, the extensions, then
//! the acceptor and its network threads. Shutdown runs the other way and
//! ends with the clean-shutdown marker. A broker-wide actor that keeps
//! failing past its restart budget raises `BrokerHandle::fatal`, and the
//! daemon shuts down cleanly.

use std::net::SocketAddr;
use std::sync::Arc;

use actix::prelude::*;

use crate::actors::acceptor::{Acceptor, StopAccepting};
use crate::actors::controller::{AdvertisedEndpoint, Controller, ControllerError};
use crate::actors::event_bus::EventBus;
use crate::actors::extension::{
    starter, Extension, ExtensionContext, ExtensionStarter, PositionStore,
};
use crate::actors::group_coordinator::{CoordinatorConfig, CoordinatorDeps, GroupCoordinator};
use crate::actors::log_manager::{
    Close, GetShards, LoadedLog, LogAdmin, LogManager, LogManagerConfig, LogManagerError,
};
use crate::actors::partition::{PartitionRegistry, PartitionRuntime, ReplicaContext};
use crate::actors::pool::{ActorPool, ActorPoolThreads};
use crate::actors::replica_fetcher::{ReplicaFetcherConfig, ReplicaFetchers};
use crate::actors::replica_manager::{ReplicaManager, StopAllReplicas};
use crate::actors::supervisor::{supervise, BrokerFatal, ChildSpec, Escalation, SupervisorLink};
use crate::broker_context::BrokerContext;
use crate::clock::{SharedClock, SystemClock};
use crate::cluster::MetadataCache;
use crate::config::BrokerConfig;
use crate::metadata::store::{MetadataError, MetadataStore};
use crate::metadata::{EmbeddedStore, ZooKeeperStore, EMBEDDED_STORE_FILE_NAME};

/// What kind of failure stopped a broker from starting or stopping: what
/// an embedder matches on. The error's `source()` says why in detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BrokerErrorKind {
    /// The logs could not be loaded, recovered, flushed or closed.
    Storage,
    /// The metadata store (embedded or ZooKeeper) failed.
    MetadataStore,
    /// `zookeeper.connect` could not be reached at start-up.
    ZooKeeperUnreachable,
    /// The controller refused a start-up step (registration, election).
    Controller,
    /// A listener could not bind.
    Listen,
    /// An invalid combination of settings.
    Config,
}

/// Why a broker could not start or stop: a kind to match on, a message,
/// and the underlying error as a boxed `source()`.
#[derive(Debug)]
pub struct BrokerError {
    kind: BrokerErrorKind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl BrokerError {
    /// What kind of failure this is.
    pub fn kind(&self) -> BrokerErrorKind {
        self.kind
    }

    fn new(
        kind: BrokerErrorKind,
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        BrokerError {
            kind,
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    fn config(message: impl Into<String>) -> Self {
        BrokerError {
            kind: BrokerErrorKind::Config,
            message: message.into(),
            source: None,
        }
    }
}

impl std::fmt::Display for BrokerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.source {
            Some(source) => write!(f, "{}: {source}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for BrokerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn std::error::Error + 'static))
    }
}

impl From<LogManagerError> for BrokerError {
    fn from(source: LogManagerError) -> Self {
        BrokerError::new(BrokerErrorKind::Storage, "storage", source)
    }
}

impl From<MetadataError> for BrokerError {
    fn from(source: MetadataError) -> Self {
        BrokerError::new(BrokerErrorKind::MetadataStore, "metadata store", source)
    }
}

impl From<ControllerError> for BrokerError {
    fn from(source: ControllerError) -> Self {
        BrokerError::new(BrokerErrorKind::Controller, "controller", source)
    }
}

/// A running broker.
pub struct BrokerHandle {
    /// The configuration it runs with.
    pub config: BrokerConfig,
    log: Addr<LogManager>,
    replica_manager: Addr<ReplicaManager>,
    context: Arc<BrokerContext>,
    /// The address the first listener is bound to (the real port when 0
    /// was asked).
    pub bound: SocketAddr,
    /// Every listener's name and bound address, in `listeners` order.
    pub listening: Vec<(String, SocketAddr)>,
    /// What start-up loaded, partition by partition (tests read it).
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    loaded: Vec<LoadedLog>,
    /// The broker's event bus.
    pub events: EventBus,
    /// The supervision record of each extension, by name.
    pub extensions: Vec<(String, SupervisorLink)>,
    fatal: tokio::sync::watch::Receiver<Option<String>>,
    acceptors: Vec<Addr<Acceptor>>,
    network: Vec<Arbiter>,
    pool: ActorPoolThreads,
    /// Kept to end the ZooKeeper session at shutdown.
    store: Arc<dyn MetadataStore>,
    /// `http.listener`'s server, if one is configured.
    http: Option<crate::net::http::HttpServer>,
    state: crate::broker_state::SharedBrokerState,
}

/// Starts brokers: see [`Broker::builder`].
pub struct Broker;

/// Builds a broker: its config, optionally a clock and extensions.
pub struct BrokerBuilder {
    config: BrokerConfig,
    clock: SharedClock,
    extensions: Vec<(String, ExtensionStarter)>,
    store: Option<Arc<dyn MetadataStore>>,
}

impl Broker {
    /// A builder for a broker on `config`, the wall clock, the embedded or ZooKeeper store as `zookeeper.connect` says, and no extensions.
    pub fn builder(config: BrokerConfig) -> BrokerBuilder {
        BrokerBuilder {
            config,
            clock: Arc::new(SystemClock),
            extensions: Vec::new(),
            store: None,
        }
    }

    /// Start a broker on the wall clock. Must run inside an actix system.
    pub async fn start(config: BrokerConfig) -> Result<BrokerHandle, BrokerError> {
        Self::builder(config).start().await
    }
}

impl BrokerBuilder {
    /// Logic that expires, rolls or retains things reads this clock.
    pub fn with_clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// Keep the metadata in `store` instead of the one the config names (a
    /// store shared by tests). Internal: `MetadataStore` is not public API.
    #[cfg(any(test, feature = "internals"))]
    pub fn with_metadata_store(mut self, store: Arc<dyn MetadataStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Run `extension`'s actor beside the broker's own, supervised.
    pub fn with_extension<E: Extension>(mut self, extension: E) -> Self {
        self.extensions.push((extension.name(), starter(extension)));
        self
    }

    /// Bring the broker up. Must run inside an actix system.
    pub async fn start(self) -> Result<BrokerHandle, BrokerError> {
        let BrokerBuilder {
            config,
            clock,
            extensions,
            store,
        } = self;
        // Reach ZooKeeper before touching the logs, so a wrong address fails
        // start-up at once.
        let store = match store {
            Some(store) => store,
            None => open_metadata_store(&config).await?,
        };
        let state = crate::broker_state::SharedBrokerState::default();
        state.set(crate::broker_state::BrokerState::Starting);
        let metrics = Arc::new(crate::metrics::BrokerMetrics::new());
        let (fatal, fatal_receiver) = BrokerFatal::new();
        let (log, loaded) = LogManager::start_supervised(
            LogManagerConfig::from_broker(&config),
            clock.clone(),
            Escalation::ShutdownBroker(fatal.clone()),
        )
        .await?;
        let shards = log
            .send(GetShards)
            .await
            .map_err(|_| LogManagerError::Stopped)?;
        let cleaner_shards = shards.clone();
        let scram_credentials = Arc::new(crate::security::credentials::UserScramCredentials::new(
            store.clone(),
        ));
        for (key, why) in config.ignored_ssl_keys() {
            log::warn!("{key} is set but ignored: {why}");
        }
        // Every listener is bound, each with its own acceptor and security.
        let mut bound_listeners = Vec::new();
        for listener in &config.listeners {
            let security = Arc::new(crate::security::ListenerSecurity {
                credentials: Some(scram_credentials.clone()),
                ..crate::security::ListenerSecurity::of(&config, listener)
                    .map_err(|e| BrokerError::config(e.to_string()))?
            });
            if listener.security_protocol == crate::config::SecurityProtocol::SaslPlaintext
                && security.mechanisms.iter().any(|m| m == "PLAIN")
            {
                log::warn!(
                    "SASL/PLAIN is enabled on listener {} without TLS: passwords cross the network in clear text",
                    listener.name
                );
            }
            let (socket, bound) = bind(listener).await?;
            bound_listeners.push((listener.clone(), socket, bound, security));
        }
        let http = bind_http(&config)?;
        // How this broker reaches the others: the inter-broker listener's
        // TLS and SASL login.
        let inter_broker = crate::net::inter_broker::InterBrokerSecurity::of(&config)
            .map_err(|e| BrokerError::config(e.to_string()))?;
        let Some(bound) = bound_listeners.first().map(|(_, _, bound, _)| *bound) else {
            return Err(BrokerError::config("listeners is empty"));
        };
        let advertised = advertised_endpoints(
            &config,
            bound_listeners.iter().map(|(l, _, bound, _)| (l, *bound)),
        );
        let cache = MetadataCache::default();
        // Dynamic broker configs (KIP-226) layer over the file; the
        // controller loads them from the store before it takes up a topic.
        let dynamic = crate::config::dynamic::DynamicBrokerConfig::new(config.clone());
        // TLS listeners reload their stores when their ssl.* keys change.
        for (listener, _, _, security) in &bound_listeners {
            if let Some(tls) = &security.tls {
                dynamic.add_reconfigurable(Arc::new(crate::security::tls::ListenerTls {
                    listener: listener.clone(),
                    tls: tls.clone(),
                }));
            }
        }
        let partitions = PartitionRegistry::default();
        let events = EventBus::new();
        let (pool, pool_threads) = ActorPool::start(config.num_io_threads.clamp(1, 64));
        let partition_runtime = PartitionRuntime {
            registry: partitions.clone(),
            shards,
            pool: pool.clone(),
            events: events.clone(),
            replica: ReplicaContext {
                broker_id: config.broker_id.max(0),
                store: Some(store.clone()),
                live_brokers: Some(cache.clone()),
                clock: clock.clone(),
                replica_lag_time_max_ms: config.replica_lag_time_max_ms as i64,
                high_watermark_checkpoint_interval_ms: config
                    .replica_high_watermark_checkpoint_interval_ms,
                broker_config: dynamic.clone(),
                metrics: metrics.clone(),
            },
        };
        let replica_manager = {
            let link = SupervisorLink::default();
            let manager = ReplicaManager::new(
                config.broker_id.max(0),
                config.zookeeper_connect.is_some(),
                dynamic.clone(),
                store.clone(),
                LogAdmin::of(&log),
                cache.clone(),
                partition_runtime.clone(),
                ReplicaFetchers::new(ReplicaFetcherConfig::from_broker(
                    &config,
                    inter_broker.clone(),
                    metrics.fetcher_lag.clone(),
                )),
                link.clone(),
            );
            supervise(
                None,
                ChildSpec::new(
                    "the replica manager",
                    Escalation::ShutdownBroker(fatal.clone()),
                ),
                link,
                move |_| manager,
            )
        };
        let client_quotas = Arc::new(crate::quota::ClientQuotas::new(
            store.clone(),
            crate::quota::rate::RateConfig {
                samples: config.quota_window_num.max(1),
                window_ms: config.quota_window_size_seconds.max(1) * 1000,
            },
        ));
        let controller = Controller::start(
            dynamic.clone(),
            store.clone(),
            cache.clone(),
            partition_runtime,
            replica_manager.clone(),
            advertised.clone(),
            client_quotas.clone(),
            inter_broker.clone(),
            fatal.clone(),
        )
        .await?;
        if config.zookeeper_connect.is_none() && config.offsets_topic_replication_factor > 1 {
            log::warn!(
                "offsets.topic.replication.factor={} cannot be met by a single broker: \
                 __consumer_offsets is created with 1 replica",
                config.offsets_topic_replication_factor
            );
        }
        let groups = GroupCoordinator::start(
            CoordinatorConfig::from_broker(&config),
            config.broker_id.max(0),
            CoordinatorDeps {
                topics: controller.clone().recipient(),
                partitions: partitions.clone(),
                metadata: cache.clone(),
                clock: clock.clone(),
                pool: pool.clone(),
                events: events.clone(),
            },
            fatal.clone(),
        );
        let authorizer = match config.authorizer_class_name {
            crate::config::AuthorizerClass::None => None,
            crate::config::AuthorizerClass::AclAuthorizer => {
                let policy = crate::security::acl::AuthorizerPolicy {
                    super_users: config.super_users.0.clone(),
                    allow_everyone_if_no_acl_found: config.allow_everyone_if_no_acl_found,
                };
                let authorizer =
                    crate::security::AclAuthorizer::start(store.clone(), policy).await?;
                crate::actors::acl_change_listener::AclChangeListener::start(
                    authorizer.clone(),
                    store.clone(),
                    fatal.clone(),
                );
                Some(authorizer)
            }
        };
        let produce_path = crate::actors::partition::ProducePath {
            partitions: partitions.clone(),
            metadata: cache.clone(),
            authorizer: authorizer.clone(),
            metrics: metrics.clone(),
        };
        let extension_context = ExtensionContext::new(
            produce_path.clone(),
            cache.clone(),
            controller.clone().recipient(),
            PositionStore::of(&groups, config.broker_id.max(0), inter_broker.clone()),
            events.clone(),
            clock.clone(),
        );
        let extensions: Vec<(String, SupervisorLink)> = extensions
            .into_iter()
            .map(|(name, start)| {
                log::info!("starting extension {name}");
                (name, start(extension_context.clone(), &pool))
            })
            .collect();
        let context = Arc::new(BrokerContext {
            inter_broker: inter_broker.clone(),
            config: config.clone(),
            dynamic: dynamic.clone(),
            broker_id: config.broker_id.max(0),
            controller: controller.clone(),
            replica_manager: replica_manager.clone(),
            groups,
            partitions,
            produce_path,
            metadata: cache,
            clock: clock.clone(),
            store: store.clone(),
            producer_ids: Arc::new(crate::producer_ids::ProducerIdManager::new(
                store.clone(),
                config.broker_id.max(0),
            )),
            request_memory: (config.queued_max_request_bytes > 0).then(|| {
                let bytes = (config.queued_max_request_bytes as u64)
                    .min(tokio::sync::Semaphore::MAX_PERMITS as u64);
                Arc::new(tokio::sync::Semaphore::new(bytes as usize))
            }),
            frame_buffers: crate::net::FrameBuffers::new(),
            log_dirs: log.clone().recipient(),
            auto_creations: Default::default(),
            authorizer,
            scram_credentials,
            client_quotas,
            metrics: metrics.clone(),
        });
        let network: Vec<Arbiter> = (0..config.num_network_threads.clamp(1, 64))
            .map(|_| Arbiter::new())
            .collect();
        // One count for every listener: max.connections is broker-wide.
        let connection_quotas =
            Arc::new(crate::net::connection_quotas::ConnectionQuotas::default());
        let mut acceptors = Vec::new();
        let mut listening = Vec::new();
        for (listener, socket, bound, security) in bound_listeners {
            log::info!(
                "listener {} ({}) bound to {bound}",
                listener.name,
                listener.security_protocol.name()
            );
            listening.push((listener.name.clone(), bound));
            acceptors.push(Acceptor::start(
                socket,
                security,
                context.clone(),
                network.iter().map(|a| a.handle()).collect(),
                connection_quotas.clone(),
                fatal.clone(),
            ));
        }
        // Started last: nothing after it can fail start-up, so it is never
        // torn down half-started with the runtime.
        if config.log_cleaner_enable {
            crate::actors::log_cleaner::LogCleaner::start(dynamic.clone(), cleaner_shards);
        }
        let http = match http {
            Some((socket, tls)) => {
                let sources = crate::metrics::scrape::ScrapeSources {
                    broker_id: context.broker_id,
                    metadata: context.metadata.clone(),
                    partitions: context.partitions.clone(),
                    dynamic: dynamic.clone(),
                    state: state.clone(),
                    log_dirs: log.clone().recipient(),
                    groups: context.groups.clone().recipient(),
                    metrics: metrics.clone(),
                    started: std::time::SystemTime::now(),
                };
                let server = crate::net::http::HttpServer::start(socket, tls, sources).map_err(
                    |source| BrokerError::new(BrokerErrorKind::Listen, "http.listener", source),
                )?;
                Some(server)
            }
            None => None,
        };
        state.set(crate::broker_state::BrokerState::RunningAsBroker);
        let offline = loaded.iter().filter(|l| l.offsets.is_err()).count();
        let recovered: usize = loaded.iter().map(|l| l.recovered_segments).sum();
        log::info!(
            "broker {} started: listening on {bound}, advertised as {}:{}, {} partition log(s) loaded, {offline} offline, {recovered} segment(s) recovered",
            context.broker_id,
            advertised.host,
            advertised.port,
            loaded.len(),
        );
        Ok(BrokerHandle {
            config,
            log,
            replica_manager,
            context,
            bound,
            listening,
            loaded,
            events,
            extensions,
            fatal: fatal_receiver,
            acceptors,
            network,
            pool: pool_threads,
            store,
            http,
            state,
        })
    }
}

/// `http.listener`'s socket, bound at start-up, and its TLS for https://
/// (the broker's `ssl.*` keystore, or `listener.name.http.ssl.*`).
#[allow(clippy::type_complexity)]
fn bind_http(
    config: &BrokerConfig,
) -> Result<Option<(std::net::TcpListener, Option<tokio_rustls::TlsAcceptor>)>, BrokerError> {
    use crate::config::HttpListener;
    let Some(address) = config.http_listener.address() else {
        return Ok(None);
    };
    let tls = match config.http_listener {
        HttpListener::Https(_) => {
            let listener = crate::config::Listener {
                name: "HTTP".to_string(),
                security_protocol: crate::config::SecurityProtocol::Ssl,
                host: address.ip().to_string(),
                port: address.port(),
            };
            let ssl = config
                .ssl_config(&listener)
                .map_err(|e| BrokerError::config(format!("http.listener: {e}")))?;
            let tls = crate::security::tls::TlsListener::new(ssl)
                .map_err(|e| BrokerError::config(format!("http.listener: {e}")))?;
            Some(tls.acceptor().ok_or_else(|| {
                BrokerError::config("http.listener is https:// but no ssl.keystore is set")
            })?)
        }
        _ => None,
    };
    let socket = crate::net::http::HttpServer::bind(address).map_err(|source| {
        BrokerError::new(
            BrokerErrorKind::Listen,
            format!("cannot listen on {address} (http.listener)"),
            source,
        )
    })?;
    Ok(Some((socket, tls)))
}

/// ZooKeeper when `zookeeper.connect` is set, else the embedded store.
async fn open_metadata_store(config: &BrokerConfig) -> Result<Arc<dyn MetadataStore>, BrokerError> {
    let Some(connect) = &config.zookeeper_connect else {
        return open_embedded_store(config);
    };
    let store = ZooKeeperStore::connect(
        connect,
        std::time::Duration::from_millis(config.zookeeper_session_timeout_ms),
        std::time::Duration::from_millis(config.zookeeper_connection_timeout_ms),
    )
    .await
    .map_err(|source| {
        BrokerError::new(
            BrokerErrorKind::ZooKeeperUnreachable,
            format!("zookeeper.connect={connect}"),
            source,
        )
    })?;
    log::info!(
        "connected to ZooKeeper at {connect} (session {:#x})",
        store.session_id()
    );
    Ok(store)
}

fn open_embedded_store(config: &BrokerConfig) -> Result<Arc<dyn MetadataStore>, BrokerError> {
    let first = config
        .log_dirs
        .first()
        .ok_or_else(|| BrokerError::config("log.dirs is empty"))?;
    // The store lives in the first log dir, opened before the logs (which
    // create their dirs): create it here, as Kafka creates missing log dirs.
    std::fs::create_dir_all(first).map_err(|source| MetadataError::Persist {
        path: first.clone(),
        source,
    })?;
    let store = EmbeddedStore::open(&first.join(EMBEDDED_STORE_FILE_NAME))?;
    Ok(store)
}

async fn bind(
    listener: &crate::config::Listener,
) -> Result<(tokio::net::TcpListener, SocketAddr), BrokerError> {
    let bind_host = if listener.host.is_empty() {
        "0.0.0.0"
    } else {
        listener.host.as_str()
    };
    let address = format!("{bind_host}:{}", listener.port);
    let failed = |source| {
        BrokerError::new(
            BrokerErrorKind::Listen,
            format!("cannot listen on {address}"),
            source,
        )
    };
    let socket = tokio::net::TcpListener::bind(&address)
        .await
        .map_err(failed)?;
    let bound = socket.local_addr().map_err(failed)?;
    Ok((socket, bound))
}

/// What each bound listener is advertised as (`advertised.listeners` by
/// name, else the listener itself; a wildcard or empty host becomes the
/// bound address or `localhost`, port 0 the port the OS gave), and the
/// inter-broker listener's endpoint as the one brokers dial.
fn advertised_endpoints<'a>(
    config: &BrokerConfig,
    bound: impl Iterator<Item = (&'a crate::config::Listener, SocketAddr)>,
) -> AdvertisedEndpoint {
    let listeners: Vec<crate::cluster::ListenerEndpoint> = bound
        .map(|(listener, bound)| {
            let advertised = config
                .advertised_listeners
                .iter()
                .find(|a| a.name == listener.name)
                .unwrap_or(listener);
            let host = match advertised.host.as_str() {
                host if !host.is_empty() && host != "0.0.0.0" && host != "::" => host.to_string(),
                _ if !bound.ip().is_unspecified() => bound.ip().to_string(),
                _ => "localhost".to_string(),
            };
            let port = match advertised.port {
                0 => bound.port(),
                port => port,
            };
            crate::cluster::ListenerEndpoint {
                name: listener.name.clone(),
                security_protocol: listener.security_protocol,
                host,
                port,
            }
        })
        .collect();
    let inter_broker = config.inter_broker_listener_name();
    let reach = listeners
        .iter()
        .find(|l| l.name == inter_broker)
        .or(listeners.first());
    AdvertisedEndpoint {
        host: reach.map_or_else(|| "localhost".to_string(), |l| l.host.clone()),
        port: reach.map_or(0, |l| l.port),
        listeners,
    }
}

/// Why a served broker stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// A signal (SIGTERM, SIGINT) asked for a stop.
    Signal(&'static str),
    /// A broker-wide actor failed past its restart budget.
    Fatal(String),
}

/// SIGTERM and SIGINT, installed before the broker starts so that a signal
/// during start-up still ends in a clean shutdown.
pub struct StopSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl StopSignals {
    /// Must run inside a tokio (actix) runtime.
    pub fn install() -> std::io::Result<StopSignals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(StopSignals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }
}

impl BrokerHandle {
    /// The log manager (the crate's own tests drive storage through it).
    #[cfg(feature = "internals")]
    pub fn log(&self) -> &Addr<LogManager> {
        &self.log
    }

    /// What start-up loaded, partition by partition.
    #[cfg(feature = "internals")]
    pub fn loaded(&self) -> &[LoadedLog] {
        &self.loaded
    }
    /// Serve until SIGTERM/SIGINT, a fatal failure, or `deadline`, then
    /// shut down cleanly; says why it stopped.
    pub async fn serve_until_stopped(
        mut self,
        mut signals: StopSignals,
        deadline: Option<std::time::Duration>,
    ) -> Result<StopReason, BrokerError> {
        let deadline = async {
            match deadline {
                Some(after) => tokio::time::sleep(after).await,
                None => std::future::pending().await,
            }
        };
        let reason = tokio::select! {
            _ = signals.term.recv() => StopReason::Signal("SIGTERM"),
            _ = signals.int.recv() => StopReason::Signal("SIGINT"),
            _ = deadline => StopReason::Signal("deadline"),
            cause = self.fatal() => StopReason::Fatal(cause),
        };
        match &reason {
            StopReason::Signal(name) => log::info!("{name}: shutting down"),
            StopReason::Fatal(cause) => log::error!("shutting down: {cause}"),
        }
        // After a fatal failure (the registration lost to another broker,
        // say) this broker no longer speaks for its id: no controlled shutdown.
        let controlled = matches!(reason, StopReason::Signal(_));
        self.stop(controlled).await?;
        Ok(reason)
    }

    /// Resolves when a broker-wide actor has failed past its restart budget,
    /// with the cause; the caller should then `shutdown`.
    pub async fn fatal(&mut self) -> String {
        loop {
            if let Some(cause) = self.fatal.borrow_and_update().clone() {
                return cause;
            }
            if self.fatal.changed().await.is_err() {
                // Nobody can raise it any more: wait forever.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Where `http.listener` serves (`/metrics`, `/healthz`, `/readyz`).
    pub fn http_address(&self) -> Option<SocketAddr> {
        self.http.as_ref().map(|h| h.bound)
    }

    /// In a cluster, first ask the controller to move this broker's
    /// leaderships away (controlled shutdown); then stop accepting, stop
    /// the partitions, flush every log, write the checkpoints and the
    /// clean-shutdown marker, so the next start skips recovery.
    pub async fn shutdown(self) -> Result<(), BrokerError> {
        self.stop(true).await
    }

    async fn stop(self, controlled: bool) -> Result<(), BrokerError> {
        use crate::broker_state::BrokerState;
        if controlled {
            self.state.set(BrokerState::PendingControlledShutdown);
            // Before the listener closes: the controller may be this broker.
            crate::controlled_shutdown::request_controlled_shutdown(
                &self.config,
                self.store.as_ref(),
                &self.context.metadata,
                &self.context.inter_broker,
            )
            .await;
        }
        self.state.set(BrokerState::BrokerShuttingDown);
        for acceptor in &self.acceptors {
            let _ = acceptor.send(StopAccepting).await;
        }
        let _ = self.replica_manager.send(StopAllReplicas).await;
        self.log
            .send(Close)
            .await
            .map_err(|_| LogManagerError::Stopped)??;
        for arbiter in &self.network {
            arbiter.stop();
        }
        self.pool.stop();
        // Ends a ZooKeeper session now, so the registration and the
        // controller claim go at once rather than after the session timeout.
        if let Err(e) = self.store.close().await {
            log::warn!("closing the metadata store session: {e}");
        }
        // Last: a readiness probe sees the shutdown until the end.
        if let Some(http) = &self.http {
            http.stop();
        }
        self.state.set(BrokerState::NotRunning);
        log::info!("broker {} shut down cleanly", self.context.broker_id);
        Ok(())
    }
}
