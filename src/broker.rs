//! The one entry point: `Broker::start(config)` brings a broker up and hands
//! back a `BrokerHandle`; `main`, the tests and `examples/` all use it.
//!
//! Today a broker is its storage: the shared log actor and its shards, with
//! every partition found in `log.dirs` loaded (and recovered when the last
//! shutdown was not clean). The network listener, partition actors and
//! metadata store attach here as they arrive.

use std::sync::Arc;

use actix::Addr;

use crate::actors::log::{Close, LoadedLog, LogActor, LogActorConfig, LogActorError};
use crate::clock::{SharedClock, SystemClock};
use crate::config::BrokerConfig;

/// A running broker.
pub struct BrokerHandle {
    pub config: BrokerConfig,
    pub log: Addr<LogActor>,
    /// What start-up loaded, partition by partition.
    pub loaded: Vec<LoadedLog>,
}

pub struct Broker;

impl Broker {
    /// Start a broker on the wall clock. Must run inside an actix system.
    pub async fn start(config: BrokerConfig) -> Result<BrokerHandle, LogActorError> {
        Self::start_with_clock(config, Arc::new(SystemClock)).await
    }

    pub async fn start_with_clock(
        config: BrokerConfig,
        clock: SharedClock,
    ) -> Result<BrokerHandle, LogActorError> {
        let (log, loaded) = LogActor::start(LogActorConfig::from_broker(&config), clock).await?;
        let offline = loaded.iter().filter(|l| l.offsets.is_err()).count();
        log::info!(
            "broker {} started: {} partition(s) loaded from {:?}, {offline} offline",
            config.broker_id,
            loaded.len(),
            config.log_dirs
        );
        Ok(BrokerHandle {
            config,
            log,
            loaded,
        })
    }
}

impl BrokerHandle {
    /// Flush every log, write the checkpoints and the clean-shutdown marker,
    /// so the next start skips recovery.
    pub async fn shutdown(self) -> Result<(), LogActorError> {
        self.log
            .send(Close)
            .await
            .map_err(|_| LogActorError::Stopped)??;
        log::info!("broker {} shut down cleanly", self.config.broker_id);
        Ok(())
    }
}
