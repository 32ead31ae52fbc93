//! The controller's channel to one other broker (Kafka's
//! `ControllerChannelManager` request-send thread): it owns one connection,
//! and delivers LeaderAndIsr, UpdateMetadata and StopReplica requests in the
//! order they were sent, each retried until the broker answers or the
//! channel's retry budget runs out. The active controller keeps one per
//! live broker and stops it when the broker leaves.
//!
//! It never decides anything: what to send is the controller's business,
//! and a refusal in the answer (a stale epoch) is reported back, not acted on.

use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, LeaderAndIsrRequest, LeaderAndIsrResponse, RequestHeader, ResponseHeader,
    StopReplicaRequest, StopReplicaResponse, UpdateMetadataRequest, UpdateMetadataResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::protocol::encode_request;

/// Versions the controller speaks (Kafka 2.8+ ZooKeeper mode: topic ids).
pub const LEADER_AND_ISR_VERSION: i16 = 5;
pub const UPDATE_METADATA_VERSION: i16 = 7;
pub const STOP_REPLICA_VERSION: i16 = 3;

/// Attempts per request before the channel gives up on it.
const DELIVERY_ATTEMPTS: u32 = 30;
/// Largest control response accepted (a full UpdateMetadata can be large).
const MAX_RESPONSE_BYTES: usize = 100 * 1024 * 1024;
const BACKOFF: Duration = Duration::from_millis(200);
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// One control request, typed.
#[derive(Debug, Clone)]
pub enum ControlRequest {
    LeaderAndIsr(LeaderAndIsrRequest),
    UpdateMetadata(UpdateMetadataRequest),
    StopReplica(StopReplicaRequest),
}

/// The answer's top-level error code (0: accepted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlAnswer {
    pub error_code: i16,
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
    /// `host:port` of the broker's listener.
    address: String,
    controller_id: i32,
    connection: Option<TcpStream>,
    correlation_id: i32,
}

impl ControllerChannel {
    pub fn new(broker_id: i32, address: String, controller_id: i32) -> ControllerChannel {
        ControllerChannel {
            broker_id,
            address,
            controller_id,
            connection: None,
            correlation_id: 0,
        }
    }
}

impl Actor for ControllerChannel {
    type Context = Context<Self>;
}

impl Handler<Deliver> for ControllerChannel {
    type Result = AtomicResponse<Self, Result<ControlAnswer, ChannelError>>;

    fn handle(&mut self, msg: Deliver, _ctx: &mut Context<Self>) -> Self::Result {
        // One request at a time, in order: the connection moves into the
        // future and comes back with the answer.
        self.correlation_id = self.correlation_id.wrapping_add(1);
        let correlation_id = self.correlation_id;
        let connection = self.connection.take();
        let address = self.address.clone();
        let broker_id = self.broker_id;
        let client_id = format!("controller-{}", self.controller_id);
        AtomicResponse::new(Box::pin(
            deliver(
                connection,
                address,
                broker_id,
                client_id,
                correlation_id,
                msg.0,
            )
            .into_actor(self)
            .map(|(connection, result), actor, _ctx| {
                actor.connection = connection;
                result
            }),
        ))
    }
}

async fn deliver(
    mut connection: Option<TcpStream>,
    address: String,
    broker_id: i32,
    client_id: String,
    correlation_id: i32,
    request: ControlRequest,
) -> (Option<TcpStream>, Result<ControlAnswer, ChannelError>) {
    let (api, version) = match &request {
        ControlRequest::LeaderAndIsr(_) => (ApiKey::LeaderAndIsr, LEADER_AND_ISR_VERSION),
        ControlRequest::UpdateMetadata(_) => (ApiKey::UpdateMetadata, UPDATE_METADATA_VERSION),
        ControlRequest::StopReplica(_) => (ApiKey::StopReplica, STOP_REPLICA_VERSION),
    };
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_string(client_id)));
    let encoded = match &request {
        ControlRequest::LeaderAndIsr(r) => encode_request(&header, api, r),
        ControlRequest::UpdateMetadata(r) => encode_request(&header, api, r),
        ControlRequest::StopReplica(r) => encode_request(&header, api, r),
    };
    let undeliverable = |reason: String| ChannelError::Undeliverable {
        broker_id,
        address: address.clone(),
        reason,
    };
    let frame = match encoded {
        Ok(frame) => frame.freeze(),
        Err(e) => return (connection, Err(undeliverable(e.to_string()))),
    };
    let mut last_error = String::new();
    for attempt in 0..DELIVERY_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(BACKOFF).await;
        }
        let mut stream = match connection.take() {
            Some(stream) => stream,
            None => match tokio::time::timeout(IO_TIMEOUT, TcpStream::connect(&address)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => {
                    last_error = e.to_string();
                    continue;
                }
                Err(_) => {
                    last_error = "connect timed out".to_owned();
                    continue;
                }
            },
        };
        match tokio::time::timeout(IO_TIMEOUT, exchange(&mut stream, &frame)).await {
            Ok(Ok(body)) => {
                let answer = decode_answer(api, version, correlation_id, body);
                return match answer {
                    Ok(answer) => (Some(stream), Ok(answer)),
                    Err(reason) => (None, Err(undeliverable(reason))),
                };
            }
            Ok(Err(e)) => last_error = e.to_string(),
            Err(_) => last_error = "no answer in time".to_owned(),
        }
    }
    (
        None,
        Err(undeliverable(format!(
            "{api:?} not delivered after {DELIVERY_ATTEMPTS} attempts: {last_error}"
        ))),
    )
}

/// Writes one frame and reads the response frame.
async fn exchange(stream: &mut TcpStream, frame: &Bytes) -> std::io::Result<Bytes> {
    stream.write_all(frame).await?;
    let size = stream.read_i32().await?;
    let size = usize::try_from(size)
        .ok()
        .filter(|&s| s <= MAX_RESPONSE_BYTES)
        .ok_or_else(|| std::io::Error::other(format!("response size {size} out of range")))?;
    let mut body = vec![0u8; size];
    stream.read_exact(&mut body).await?;
    Ok(Bytes::from(body))
}

fn decode_answer(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    mut body: Bytes,
) -> Result<ControlAnswer, String> {
    let header = ResponseHeader::decode(&mut body, api.response_header_version(version))
        .map_err(|e| format!("response header: {e}"))?;
    if header.correlation_id != correlation_id {
        return Err(format!(
            "correlation id {} answers request {correlation_id}",
            header.correlation_id
        ));
    }
    let error_code = match api {
        ApiKey::LeaderAndIsr => LeaderAndIsrResponse::decode(&mut body, version)
            .map(|r| r.error_code)
            .map_err(|e| e.to_string())?,
        ApiKey::UpdateMetadata => UpdateMetadataResponse::decode(&mut body, version)
            .map(|r| r.error_code)
            .map_err(|e| e.to_string())?,
        _ => StopReplicaResponse::decode(&mut body, version)
            .map(|r| r.error_code)
            .map_err(|e| e.to_string())?,
    };
    Ok(ControlAnswer { error_code })
}
