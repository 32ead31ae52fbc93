//! The controller's channel to one other broker (Kafka's
//! `ControllerChannelManager` request-send thread): it owns one connection,
//! and delivers LeaderAndIsr, UpdateMetadata and StopReplica requests in the
//! order they were sent, each retried until the broker answers or leaves
//! the cluster, as Kafka's RequestSendThread does (a request dropped while
//! the broker is still registered would leave it with a stale view). The
//! active controller keeps one per live broker in a [`ChannelHandle`];
//! dropping the handle (the broker left) ends the retries.
//!
//! It never decides anything: what to send is the controller's business,
//! and a refusal in the answer (a stale epoch) is reported back, not acted on.

use kafka_protocol::error::ResponseError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use kafka_protocol::messages::{
    ApiKey, LeaderAndIsrRequest, LeaderAndIsrResponse, StopReplicaRequest, StopReplicaResponse,
    UpdateMetadataRequest, UpdateMetadataResponse,
};

use super::supervisor::{supervise, ChildSpec, Escalation, SupervisorLink};
use crate::net::client::{BrokerClient, ClientError};
use crate::net::inter_broker::InterBrokerSecurity;

/// Versions the controller speaks (Kafka 2.8+ ZooKeeper mode: topic ids).
pub const LEADER_AND_ISR_VERSION: i16 = 5;
pub const UPDATE_METADATA_VERSION: i16 = 7;
pub const STOP_REPLICA_VERSION: i16 = 3;

/// Largest control response accepted (a full UpdateMetadata can be large).
const MAX_RESPONSE_BYTES: usize = 100 * 1024 * 1024;
/// The first retry's wait; each next one doubles, up to `BACKOFF_MAX`.
const BACKOFF: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// One control request, typed.
#[derive(Debug, Clone)]
pub enum ControlRequest {
    LeaderAndIsr(LeaderAndIsrRequest),
    UpdateMetadata(UpdateMetadataRequest),
    StopReplica(StopReplicaRequest),
}

/// The answer's top-level error code (0: accepted), and how many of its
/// partitions answered an error of their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlAnswer {
    pub error_code: i16,
    pub partition_errors: usize,
    /// LeaderAndIsr: the partitions (topic id, index) that answered
    /// KAFKA_STORAGE_ERROR, their replica's log being offline there.
    pub offline: Vec<([u8; 16], i32)>,
}

/// Why a request could not be delivered.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("broker {broker_id} at {address}: {reason}")]
    Undeliverable {
        broker_id: i32,
        address: String,
        reason: String,
    },
}

/// Deliver one request; answers once the broker has answered it.
#[derive(Message)]
#[rtype(result = "Result<ControlAnswer, ChannelError>")]
pub struct Deliver(pub ControlRequest);

pub struct ControllerChannel {
    broker_id: i32,
    address: String,
    controller_id: i32,
    /// How its connection is secured (the inter-broker listener's).
    security: Arc<InterBrokerSecurity>,
    /// Taken by the request in flight and given back with its answer.
    client: Option<BrokerClient>,
    /// The request being delivered: after a panic the restarted channel
    /// delivers it again before the ones queued behind it, so the broker
    /// still sees every request, in order, as Kafka's RequestSendThread
    /// retries the request it holds.
    in_flight: Option<ControlRequest>,
    /// False once the controller dropped the channel's handle.
    open: Arc<AtomicBool>,
    link: SupervisorLink,
}

/// The controller's hold on a channel: the address to send to, and the
/// channel's life. Dropped when the broker leaves; the request being
/// retried then ends, and the queued ones are refused.
pub struct ChannelHandle {
    pub addr: Addr<ControllerChannel>,
    open: Arc<AtomicBool>,
    link: SupervisorLink,
}

impl Drop for ChannelHandle {
    fn drop(&mut self) {
        self.open.store(false, Ordering::SeqCst);
        // The channel stops once its queue drains: on purpose, so its
        // supervisor leaves it stopped.
        self.link.stop();
    }
}

fn client_for(
    address: &str,
    controller_id: i32,
    security: &Arc<InterBrokerSecurity>,
) -> BrokerClient {
    BrokerClient::new(
        address.to_owned(),
        format!("controller-{controller_id}"),
        IO_TIMEOUT,
        MAX_RESPONSE_BYTES,
        security.clone(),
    )
}

impl ControllerChannel {
    /// Starts the channel to `broker_id` at `address`, supervised: a panic
    /// restarts it with a new connection (past its budget it refuses every
    /// request, and the controller logs each refusal).
    pub fn start(
        broker_id: i32,
        address: String,
        controller_id: i32,
        security: Arc<InterBrokerSecurity>,
    ) -> ChannelHandle {
        let open = Arc::new(AtomicBool::new(true));
        let link = SupervisorLink::default();
        let channel = ControllerChannel {
            broker_id,
            client: Some(client_for(&address, controller_id, &security)),
            address,
            security,
            controller_id,
            in_flight: None,
            open: open.clone(),
            link: link.clone(),
        };
        let spec = ChildSpec::new(
            format!("the controller channel to broker {broker_id}"),
            Escalation::Degrade,
        );
        ChannelHandle {
            addr: supervise(None, spec, link.clone(), move |_| channel),
            open,
            link,
        }
    }

    /// Delivers `request` with the channel's client, holding the actor
    /// (`wait`/`AtomicResponse`) so requests go out one at a time, in
    /// order.
    fn delivery(
        &mut self,
        request: ControlRequest,
    ) -> impl ActorFuture<Self, Output = Result<ControlAnswer, ChannelError>> + 'static {
        let broker_id = self.broker_id;
        let address = self.address.clone();
        let degraded = self.link.escalated();
        let client = self.client.take();
        let open = self.open.clone();
        self.in_flight = Some(request.clone());
        async move {
            if let Some(cause) = degraded {
                let error = ChannelError::Undeliverable {
                    broker_id,
                    address,
                    reason: cause,
                };
                return (client, Err(error));
            }
            let Some(mut client) = client else {
                let error = ChannelError::Undeliverable {
                    broker_id,
                    address,
                    reason: "the channel lost its client".into(),
                };
                return (None, Err(error));
            };
            fail::fail_point!("controller_channel.deliver");
            let result = deliver(&mut client, broker_id, request, &open).await;
            (Some(client), result)
        }
        .into_actor(self)
        .map(|(client, result), actor, _ctx| {
            if client.is_some() {
                actor.client = client;
            }
            actor.in_flight = None;
            result
        })
    }
}

impl actix::Supervised for ControllerChannel {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        // The failed attempt took the client with it.
        self.client = Some(client_for(
            &self.address,
            self.controller_id,
            &self.security,
        ));
        log::warn!(
            "the controller channel to broker {} restarts with a new connection",
            self.broker_id
        );
    }
}

impl Actor for ControllerChannel {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // After a restart: the request the failed attempt held goes first.
        // Its sender was answered with a mailbox error already.
        if let Some(request) = self.in_flight.take() {
            log::warn!(
                "the controller channel to broker {} delivers again the request it held",
                self.broker_id
            );
            let broker_id = self.broker_id;
            ctx.wait(
                self.delivery(request)
                    .map(move |result, _, _| match result {
                        Ok(answer) if answer.error_code != 0 => log::warn!(
                            "broker {broker_id} refused a control request: error {}",
                            answer.error_code
                        ),
                        Ok(_) => {}
                        Err(e) => log::warn!("{e}"),
                    }),
            );
        }
    }
}

impl Handler<Deliver> for ControllerChannel {
    type Result = AtomicResponse<Self, Result<ControlAnswer, ChannelError>>;

    fn handle(&mut self, msg: Deliver, _ctx: &mut Context<Self>) -> Self::Result {
        AtomicResponse::new(Box::pin(self.delivery(msg.0)))
    }
}

async fn deliver(
    client: &mut BrokerClient,
    broker_id: i32,
    request: ControlRequest,
    open: &AtomicBool,
) -> Result<ControlAnswer, ChannelError> {
    let mut last_error = String::new();
    let mut backoff = BACKOFF;
    let mut attempt: u64 = 0;
    // Bounded by the broker's membership: the controller drops the handle
    // when the broker leaves.
    while open.load(Ordering::SeqCst) {
        if attempt > 0 {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
        attempt += 1;
        if attempt.is_multiple_of(30) {
            log::warn!(
                "controller channel to broker {broker_id}: {attempt} attempts so far: {last_error}"
            );
        }
        let answer = match &request {
            ControlRequest::LeaderAndIsr(r) => client
                .call::<_, LeaderAndIsrResponse>(ApiKey::LeaderAndIsr, LEADER_AND_ISR_VERSION, r)
                .await
                .map(|r| {
                    let failed = r
                        .topics
                        .iter()
                        .flat_map(|t| t.partition_errors.iter())
                        .filter(|p| p.error_code != 0)
                        .count();
                    let storage_error = ResponseError::KafkaStorageError.code();
                    let offline = r
                        .topics
                        .iter()
                        .flat_map(|t| {
                            t.partition_errors
                                .iter()
                                .filter(move |p| p.error_code == storage_error)
                                .map(move |p| (*t.topic_id.as_bytes(), p.partition_index))
                        })
                        .collect();
                    (r.error_code, failed, offline)
                }),
            ControlRequest::UpdateMetadata(r) => client
                .call::<_, UpdateMetadataResponse>(
                    ApiKey::UpdateMetadata,
                    UPDATE_METADATA_VERSION,
                    r,
                )
                .await
                .map(|r| (r.error_code, 0, Vec::new())),
            ControlRequest::StopReplica(r) => client
                .call::<_, StopReplicaResponse>(ApiKey::StopReplica, STOP_REPLICA_VERSION, r)
                .await
                .map(|r| {
                    let failed = r
                        .partition_errors
                        .iter()
                        .filter(|p| p.error_code != 0)
                        .count();
                    (r.error_code, failed, Vec::new())
                }),
        };
        match answer {
            Ok((error_code, partition_errors, offline)) => {
                return Ok(ControlAnswer {
                    error_code,
                    partition_errors,
                    offline,
                })
            }
            // The broker answered nonsense: sending it again will not help.
            Err(e @ ClientError::Decode { .. }) => {
                return Err(ChannelError::Undeliverable {
                    broker_id,
                    address: client.address().to_owned(),
                    reason: e.to_string(),
                })
            }
            Err(e) => last_error = e.to_string(),
        }
    }
    Err(ChannelError::Undeliverable {
        broker_id,
        address: client.address().to_owned(),
        reason: format!("the broker left after {attempt} attempts: {last_error}"),
    })
}
