//! Kafka's broker states (`kafka.server:type=KafkaServer,name=BrokerState`,
//! `kafka_server_kafkaserver_brokerstate` through the exporter): what a
//! readiness probe and a dashboard read.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// Kafka's `BrokerState` values, with Kafka's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum BrokerState {
    NotRunning = 0,
    Starting = 1,
    RecoveryFromUncleanShutdown = 2,
    RunningAsBroker = 3,
    PendingControlledShutdown = 6,
    BrokerShuttingDown = 7,
}

impl BrokerState {
    fn from_code(code: u8) -> BrokerState {
        match code {
            1 => BrokerState::Starting,
            2 => BrokerState::RecoveryFromUncleanShutdown,
            3 => BrokerState::RunningAsBroker,
            6 => BrokerState::PendingControlledShutdown,
            7 => BrokerState::BrokerShuttingDown,
            _ => BrokerState::NotRunning,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            BrokerState::NotRunning => "not running",
            BrokerState::Starting => "starting",
            BrokerState::RecoveryFromUncleanShutdown => "recovering from an unclean shutdown",
            BrokerState::RunningAsBroker => "running",
            BrokerState::PendingControlledShutdown => "in controlled shutdown",
            BrokerState::BrokerShuttingDown => "shutting down",
        }
    }
}

/// The broker's state, shared by start-up, shutdown and the HTTP listener.
#[derive(Debug, Clone)]
pub struct SharedBrokerState(Arc<AtomicU8>);

impl Default for SharedBrokerState {
    fn default() -> Self {
        SharedBrokerState(Arc::new(AtomicU8::new(BrokerState::NotRunning as u8)))
    }
}

impl SharedBrokerState {
    pub fn get(&self) -> BrokerState {
        BrokerState::from_code(self.0.load(Ordering::Acquire))
    }

    pub fn set(&self, state: BrokerState) {
        log::debug!("broker state: {}", state.name());
        self.0.store(state as u8, Ordering::Release);
    }
}
