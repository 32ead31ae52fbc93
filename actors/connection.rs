//! A connection actor: one per client socket. It reads request frames,
//! starts each request's handler at once (pipelining), and writes the
//! responses strictly in request order; produce requests also enqueue their
//! appends in request order (`ProduceOrder`). A client that stops reading
//! its responses is disconnected after `connections.max.idle.ms`. At most `MAX_IN_FLIGHT` requests per
//! connection are outstanding; past that it stops reading (backpressure).
//!
//! A frame it cannot parse closes the connection with a log line; it never
//! lets client input panic the broker. It owns no broker state.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::api::produce::ProduceOrder;
use crate::api::{self, RequestOrigin};
use crate::broker_context::BrokerContext;
use crate::net::{read_request_frame, write_frame, FrameError};
use crate::protocol::{self, ProtocolError, ResponseFrame};
use kafka_protocol::messages::ApiKey;

/// Requests one connection may have in flight before reading pauses.
pub const MAX_IN_FLIGHT: usize = 64;

type PendingResponse = JoinHandle<Result<Option<ResponseFrame>, ProtocolError>>;

pub struct Connection {
    peer: SocketAddr,
    stream: Option<TcpStream>,
    ctx: Arc<BrokerContext>,
    open_connections: Arc<AtomicUsize>,
}

impl Connection {
    pub fn new(
        peer: SocketAddr,
        stream: TcpStream,
        ctx: Arc<BrokerContext>,
        open_connections: Arc<AtomicUsize>,
    ) -> Self {
        Connection {
            peer,
            stream: Some(stream),
            ctx,
            open_connections,
        }
    }
}

impl Actor for Connection {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let Some(stream) = self.stream.take() else {
            ctx.stop();
            return;
        };
        let (read_half, write_half) = stream.into_split();
        let (queue, pending) = mpsc::channel::<PendingResponse>(MAX_IN_FLIGHT);
        let peer = self.peer;
        let broker = self.ctx.clone();
        let max_frame = broker.config.socket_request_max_bytes as usize;
        let idle = Duration::from_millis(broker.config.connections_max_idle_ms.max(1) as u64);
        let reader = read_requests(read_half, queue, broker, peer, max_frame, idle);
        let writer = write_responses(write_half, pending, peer, idle);
        let both = async move {
            // The writer ends when the reader drops the queue and every
            // response is out, or on a write error.
            let _ = tokio::join!(reader, writer);
        };
        ctx.wait(both.into_actor(self).map(|(), _actor, ctx| ctx.stop()));
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        self.open_connections.fetch_sub(1, Ordering::SeqCst);
        log::debug!("connection from {} closed", self.peer);
    }
}

async fn read_requests(
    mut reader: tokio::net::tcp::OwnedReadHalf,
    queue: mpsc::Sender<PendingResponse>,
    broker: Arc<BrokerContext>,
    peer: SocketAddr,
    max_frame: usize,
    idle: Duration,
) {
    let produce_order = ProduceOrder::default();
    // PLAINTEXT: every request is User:ANONYMOUS's.
    let session = Arc::new(crate::security::Session::anonymous(peer.ip()));
    loop {
        let read = read_request_frame(
            &mut reader,
            max_frame,
            broker.request_memory.as_ref(),
            &broker.frame_buffers,
        );
        let frame = match tokio::time::timeout(idle, read).await {
            Err(_) => {
                log::debug!("closing idle connection from {peer}");
                return;
            }
            Ok(Err(FrameError::Closed)) => return,
            Ok(Err(e)) => {
                log::warn!("closing connection from {peer}: {e}");
                return;
            }
            Ok(Ok(frame)) => frame,
        };
        let pending: PendingResponse = match protocol::decode_request(frame) {
            Ok(request) => {
                let broker = broker.clone();
                // Tickets are taken in read order: appends follow it.
                let origin = RequestOrigin {
                    peer,
                    session: session.clone(),
                    produce_turn: matches!(request.api, ApiKey::Produce)
                        .then(|| produce_order.ticket()),
                };
                actix_rt::spawn(async move { api::handle(&broker, request, origin).await })
            }
            Err(ProtocolError::UnsupportedVersion {
                api: kafka_protocol::messages::ApiKey::ApiVersions,
                correlation_id,
                ..
            }) => actix_rt::spawn(async move {
                protocol::unsupported_api_versions_response(correlation_id).map(Some)
            }),
            Err(e) => {
                log::warn!("closing connection from {peer}: {e}");
                return;
            }
        };
        if queue.send(pending).await.is_err() {
            return;
        }
    }
}

async fn write_responses(
    mut writer: tokio::net::tcp::OwnedWriteHalf,
    mut pending: mpsc::Receiver<PendingResponse>,
    peer: SocketAddr,
    stall_limit: Duration,
) {
    while let Some(response) = pending.recv().await {
        let frame = match response.await {
            Ok(Ok(Some(frame))) => frame,
            Ok(Ok(None)) => continue,
            Ok(Err(e @ ProtocolError::FailedWithoutResponse(_))) => {
                log::info!("closing connection from {peer}: {e}");
                return;
            }
            Ok(Err(e)) => {
                log::error!("closing connection from {peer}: {e}");
                return;
            }
            Err(e) => {
                log::error!("closing connection from {peer}: a request handler failed: {e}");
                return;
            }
        };
        // A client that stops reading would hold its responses (and the
        // files they splice from) forever: a response not written within
        // `connections.max.idle.ms` closes the connection.
        match tokio::time::timeout(stall_limit, write_frame(&mut writer, &frame)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                log::debug!("writing to {peer} failed: {e}");
                return;
            }
            Err(_) => {
                log::info!(
                    "closing connection from {peer}: it read nothing for {} ms",
                    stall_limit.as_millis()
                );
                return;
            }
        }
    }
}
