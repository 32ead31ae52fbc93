//! The acceptor: owns one listener's socket, enforces `max.connections`
//! and `max.connections.per.ip` (with its overrides) over every listener,
//! and `max.connection.creation.rate` and the addresses'
//! `connection_creation_rate` quotas (a connection over a limit is closed
//! at once with a log line and counted, the others are untouched), and
//! starts one `Connection` actor per client, spread round robin over the
//! network arbiters (`num.network.threads` threads).
//!
//! It never reads from a client socket itself. It runs under `supervise`:
//! a panic in the accept loop costs the connection being accepted, and the
//! restarted acceptor listens again on the same socket (it keeps the
//! listener and the open-connection count); past its budget the broker
//! shuts down, as it cannot serve without it.

use std::net::SocketAddr;
use std::sync::Arc;

use actix::prelude::*;
use tokio::net::TcpListener;

use super::connection::Connection;
use super::supervisor::{supervise, BrokerFatal, ChildSpec, Escalation, SupervisorLink};
use crate::broker_context::BrokerContext;
use crate::net::connection_quotas::{ConnectionQuotas, ConnectionSlot, CreationLimits};
use crate::security::ListenerSecurity;

pub struct Acceptor {
    /// Shared with the accept loop, which a restart spawns again.
    listener: Arc<TcpListener>,
    /// How this listener's clients authenticate.
    security: Arc<ListenerSecurity>,
    ctx: Arc<BrokerContext>,
    arbiters: Vec<ArbiterHandle>,
    open_connections: Arc<ConnectionQuotas>,
    link: SupervisorLink,
}

impl Acceptor {
    /// Starts accepting on `listener` under supervision.
    pub fn start(
        listener: TcpListener,
        security: Arc<ListenerSecurity>,
        ctx: Arc<BrokerContext>,
        arbiters: Vec<ArbiterHandle>,
        open_connections: Arc<ConnectionQuotas>,
        fatal: BrokerFatal,
    ) -> Addr<Acceptor> {
        let link = SupervisorLink::default();
        let acceptor = Acceptor {
            listener: Arc::new(listener),
            security,
            ctx,
            arbiters,
            open_connections,
            link: link.clone(),
        };
        supervise(
            None,
            ChildSpec::new("the acceptor", Escalation::ShutdownBroker(fatal)),
            link,
            move |_| acceptor,
        )
    }
}

impl actix::Supervised for Acceptor {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        match self.listener.local_addr() {
            Ok(address) => log::warn!("the acceptor restarts and listens again on {address}"),
            Err(_) => log::warn!("the acceptor restarts and listens again"),
        }
    }
}

impl Actor for Acceptor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let listener = self.listener.clone();
        let security = self.security.clone();
        let broker = self.ctx.clone();
        let arbiters = self.arbiters.clone();
        let open = self.open_connections.clone();
        let accept_loop = async move {
            let mut next = 0usize;
            loop {
                let (stream, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of descriptors and similar: keep serving the
                        // connections we have, try again shortly.
                        log::warn!("accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        continue;
                    }
                };
                fail::fail_point!("acceptor.accepted");
                // Read at each connection: the limits are dynamic.
                let limits = broker.dynamic.current();
                let for_ip = limits
                    .max_connections_per_ip_overrides
                    .limit_for(peer.ip(), limits.max_connections_per_ip);
                let quotas = &broker.client_quotas.manager;
                let creation = CreationLimits {
                    broker_rate: limits.max_connection_creation_rate as f64,
                    ip_rate: quotas.ip_connection_rate(peer.ip()),
                    windows: quotas.rate_config(),
                };
                let now_ms = broker.clock.now_ms().max(0) as u64;
                let admitted = open
                    .try_create(peer.ip(), now_ms, creation)
                    .and_then(|()| open.try_open(peer.ip(), limits.max_connections.max(1), for_ip));
                let slot = match admitted {
                    Ok(slot) => slot,
                    Err(refusal) => {
                        let refused = open.note_refused();
                        log::warn!(
                            "closing the new connection from {peer}: {refusal} ({refused} closed for a limit since start)"
                        );
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let std_stream = match stream.into_std() {
                    Ok(s) => s,
                    Err(e) => {
                        log::warn!("cannot hand over the connection from {peer}: {e}");
                        continue;
                    }
                };
                if let Err(e) = crate::net::set_socket_buffers(
                    &std_stream,
                    broker.config.socket_send_buffer_bytes,
                    broker.config.socket_receive_buffer_bytes,
                ) {
                    log::warn!("cannot size the socket buffers of {peer}: {e}");
                }
                start_connection(
                    &arbiters,
                    &mut next,
                    peer,
                    std_stream,
                    (broker.clone(), security.clone()),
                    slot,
                );
            }
        };
        ctx.spawn(accept_loop.into_actor(self));
    }
}

fn start_connection(
    arbiters: &[ArbiterHandle],
    next: &mut usize,
    peer: SocketAddr,
    stream: std::net::TcpStream,
    (broker, security): (Arc<BrokerContext>, Arc<ListenerSecurity>),
    slot: ConnectionSlot,
) {
    let start = move || match tokio::net::TcpStream::from_std(stream) {
        Ok(stream) => {
            Connection::new(peer, stream, broker, security, slot).start();
        }
        // The slot goes with the closure: dropped, it frees the place.
        Err(e) => {
            log::warn!("cannot register the connection from {peer}: {e}");
        }
    };
    if arbiters.is_empty() {
        start();
        return;
    }
    let arbiter = &arbiters[*next % arbiters.len()];
    *next = next.wrapping_add(1);
    if !arbiter.spawn_fn(start) {
        log::error!("network arbiter is gone; dropping the connection from {peer}");
    }
}

/// Stop accepting new connections (shutdown); open ones finish on their own.
#[derive(Debug)]
pub struct StopAccepting;

impl Message for StopAccepting {
    type Result = ();
}

impl Handler<StopAccepting> for Acceptor {
    type Result = ();

    fn handle(&mut self, _msg: StopAccepting, ctx: &mut Context<Self>) {
        // A deliberate stop: the supervisor leaves it stopped, and the
        // listener closes with the actor.
        self.link.stop();
        ctx.stop();
    }
}
