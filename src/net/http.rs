//! The HTTP listener (`http.listener`): `/metrics` in the Prometheus
//! exposition format, `/healthz` (the process answers) and `/readyz`
//! (running, registered, metadata loaded). axum routes, hyper serves, on a
//! thread and tokio runtime of its own, never an actor's.
//!
//! Bounded against bad clients: at most `MAX_CONNECTIONS` at once (the
//! rest are closed on accept, with a log line), request heads up to
//! `MAX_HEAD_BYTES` (hyper answers 431 past it), `HEAD_TIMEOUT` to send
//! one (a slow client is dropped), and no request bodies are read.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::metrics::scrape::{scrape, ScrapeSources};

const MAX_CONNECTIONS: usize = 64;
const MAX_HEAD_BYTES: usize = 64 * 1024;
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// OpenMetrics 1.0: what `prometheus-client` writes (Prometheus reads it).
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The running listener: its address, and the thread serving it.
pub struct HttpServer {
    pub bound: SocketAddr,
    arbiter: actix_rt::Arbiter,
}

impl HttpServer {
    /// Binds `address` (at start-up: a taken port fails it, as a Kafka
    /// listener's does).
    pub fn bind(address: SocketAddr) -> std::io::Result<std::net::TcpListener> {
        let socket = std::net::TcpListener::bind(address)?;
        socket.set_nonblocking(true)?;
        Ok(socket)
    }

    /// Serves `socket` from a thread of its own.
    pub fn start(
        socket: std::net::TcpListener,
        tls: Option<tokio_rustls::TlsAcceptor>,
        sources: ScrapeSources,
    ) -> std::io::Result<HttpServer> {
        let bound = socket.local_addr()?;
        let router = Router::new()
            .route("/metrics", get(metrics))
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            .with_state(Arc::new(sources));
        let scheme = if tls.is_some() { "https" } else { "http" };
        let arbiter = actix_rt::Arbiter::new();
        arbiter.spawn(async move {
            let listener = match tokio::net::TcpListener::from_std(socket) {
                Ok(listener) => listener,
                Err(e) => {
                    log::error!("http.listener on {bound}: {e}");
                    return;
                }
            };
            accept_loop(listener, tls, router).await;
        });
        log::info!("HTTP listener ({scheme}) bound to {bound}: /metrics, /healthz, /readyz");
        Ok(HttpServer { bound, arbiter })
    }

    pub fn stop(&self) {
        self.arbiter.stop();
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    router: Router,
) {
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // EMFILE and the like: pause rather than spin.
                log::warn!("http.listener accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            log::warn!(
                "http.listener: closing a connection from {peer}: {MAX_CONNECTIONS} already open"
            );
            continue;
        };
        let router = router.clone();
        let tls = tls.clone();
        actix_rt::spawn(async move {
            let _permit = permit;
            match tls {
                None => serve(stream, router, peer).await,
                Some(acceptor) => {
                    match tokio::time::timeout(HEAD_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(stream)) => serve(stream, router, peer).await,
                        Ok(Err(e)) => log::info!("http.listener: TLS handshake from {peer} failed: {e}"),
                        Err(_) => log::info!("http.listener: TLS handshake from {peer} timed out"),
                    }
                }
            }
        });
    }
}

async fn serve<S>(stream: S, router: Router, peer: SocketAddr)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES)
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(router))
        .await;
    if let Err(e) = served {
        log::debug!("http.listener: connection from {peer}: {e}");
    }
}

async fn metrics(State(sources): State<Arc<ScrapeSources>>) -> impl IntoResponse {
    let body = scrape(&sources).await;
    ([(header::CONTENT_TYPE, OPENMETRICS)], body)
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(sources): State<Arc<ScrapeSources>>) -> (StatusCode, String) {
    match sources.readiness() {
        Ok(()) => (StatusCode::OK, "ready\n".to_string()),
        Err(reason) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {reason}\n")),
    }
}
