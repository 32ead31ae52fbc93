//! The acceptor: owns the listening socket, enforces `max.connections`, and
//! starts one `Connection` actor per client, spread round robin over the
//! network arbiters (`num.network.threads` threads).
//!
//! It never reads from a client socket itself.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use actix::prelude::*;
use tokio::net::TcpListener;

use super::connection::Connection;
use crate::api::BrokerContext;

pub struct Acceptor {
    listener: Option<TcpListener>,
    ctx: Arc<BrokerContext>,
    arbiters: Vec<ArbiterHandle>,
    open_connections: Arc<AtomicUsize>,
}

impl Acceptor {
    pub fn new(
        listener: TcpListener,
        ctx: Arc<BrokerContext>,
        arbiters: Vec<ArbiterHandle>,
    ) -> Self {
        Acceptor {
            listener: Some(listener),
            ctx,
            arbiters,
            open_connections: Arc::new(AtomicUsize::new(0)),
        }
    }
}

impl Actor for Acceptor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let Some(listener) = self.listener.take() else {
            return;
        };
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
                // Read at each connection: `max.connections` is dynamic.
                let max_connections = broker.dynamic.current().max_connections.max(1);
                if open.load(Ordering::SeqCst) >= max_connections {
                    log::warn!("refusing {peer}: max.connections ({max_connections}) reached");
                    continue;
                }
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
                open.fetch_add(1, Ordering::SeqCst);
                start_connection(
                    &arbiters,
                    &mut next,
                    peer,
                    std_stream,
                    broker.clone(),
                    open.clone(),
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
    broker: Arc<BrokerContext>,
    open: Arc<AtomicUsize>,
) {
    let start = move || match tokio::net::TcpStream::from_std(stream) {
        Ok(stream) => {
            Connection::new(peer, stream, broker, open).start();
        }
        Err(e) => {
            open.fetch_sub(1, Ordering::SeqCst);
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
        ctx.stop();
    }
}
