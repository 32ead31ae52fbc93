//! A connection actor: one per client socket. It reads request frames,
//! starts each request's handler at once (pipelining), and writes the
//! responses strictly in request order; produce requests also enqueue their
//! appends in request order (`ProduceOrder`). A client that stops reading
//! its responses is disconnected after `connections.max.idle.ms`. At most `MAX_IN_FLIGHT` requests per
//! connection are outstanding; past that it stops reading (backpressure).
//!
//! On an SSL or SASL_SSL listener the TLS handshake comes first (a failed
//! or unfinished one closes the connection with a log line); the client's
//! certificate, when it sent one, names its principal (`security::tls`).
//! Responses are written with `sendfile(2)`, or copied through TLS.
//!
//! On a SASL listener it runs the exchange first (`security::sasl`): only
//! ApiVersions, SaslHandshake and SaslAuthenticate (or, after a v0
//! handshake, one bare token) are taken until the client authenticated;
//! anything else, a failed authentication or an unsupported mechanism
//! closes the connection after its answer, as Kafka's
//! `SaslServerAuthenticator` does. Requests then run as the authenticated
//! principal; on PLAINTEXT as `User:ANONYMOUS`.
//!
//! A frame it cannot parse closes the connection with a log line; it never
//! lets client input panic the broker. It owns no broker state.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::io::AsyncRead;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::api::produce::ProduceOrder;
use crate::api::{self, RequestOrigin};
use crate::broker_context::BrokerContext;
use crate::net::connection_quotas::ConnectionSlot;
use crate::net::{read_request_frame, write_frame, FrameError, ResponseWriter};
use crate::protocol::{self, ProtocolError, Request, ResponseFrame};
use crate::quota::ChannelMute;
use crate::security::sasl::{SaslExchange, SaslStep};
use crate::security::scram;
use crate::security::{KafkaPrincipal, ListenerSecurity, Session};
use kafka_protocol::messages::ApiKey;

/// Requests one connection may have in flight before reading pauses.
pub const MAX_IN_FLIGHT: usize = 64;

/// A request's answer being made, and when it was ready.
type PendingResponse = JoinHandle<(Result<Option<ResponseFrame>, ProtocolError>, Instant)>;

/// An answer in the connection's line, with what RequestMetrics needs: the
/// request's names and when its frame was read (none for SASL answers the
/// gate makes itself).
struct Queued {
    response: PendingResponse,
    timing: Option<(api::RequestNames, Instant)>,
}

pub struct Connection {
    peer: SocketAddr,
    stream: Option<TcpStream>,
    ctx: Arc<BrokerContext>,
    security: Arc<ListenerSecurity>,
    /// Its place under the connection limits, freed with the actor.
    _slot: ConnectionSlot,
}

impl Connection {
    pub fn new(
        peer: SocketAddr,
        stream: TcpStream,
        ctx: Arc<BrokerContext>,
        security: Arc<ListenerSecurity>,
        slot: ConnectionSlot,
    ) -> Self {
        Connection {
            peer,
            stream: Some(stream),
            ctx,
            security,
            _slot: slot,
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
        let peer = self.peer;
        let broker = self.ctx.clone();
        let idle = Duration::from_millis(broker.config.connections_max_idle_ms.max(1) as u64);
        let security = self.security.clone();
        let serve = async move {
            let Some(tls) = security.tls.clone() else {
                let (read_half, write_half) = stream.into_split();
                let session = Session::anonymous(peer.ip());
                let writer = ResponseWriter::Plain(write_half);
                serve(read_half, writer, broker, security, peer, session).await;
                return;
            };
            let Some(acceptor) = tls.acceptor() else {
                log::error!("closing connection from {peer}: the listener's TLS is unavailable");
                return;
            };
            // A client that never finishes its handshake is idle.
            let stream = match tokio::time::timeout(idle, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => {
                    log::warn!(
                        "closing connection from {peer} on {}: TLS handshake failed: {e}",
                        security.listener
                    );
                    return;
                }
                Err(_) => {
                    log::warn!(
                        "closing connection from {peer} on {}: no TLS handshake within {} ms",
                        security.listener,
                        idle.as_millis()
                    );
                    return;
                }
            };
            let certificates = stream.get_ref().1.peer_certificates();
            let principal = match tls.principal(certificates) {
                Ok(principal) => {
                    if certificates.is_some() {
                        log::debug!("{peer} presented a certificate for {principal}");
                    }
                    principal
                }
                Err(why) => {
                    log::warn!("closing connection from {peer}: {why}");
                    return;
                }
            };
            let session = Session {
                principal,
                host: peer.ip().to_canonical().to_string(),
            };
            let (read_half, write_half) = tokio::io::split(stream);
            let writer = ResponseWriter::Tls(write_half);
            serve(read_half, writer, broker, security, peer, session).await;
        };
        ctx.wait(serve.into_actor(self).map(|(), _actor, ctx| ctx.stop()));
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        log::debug!("connection from {} closed", self.peer);
    }
}

/// Reads requests and writes their responses until either side ends.
async fn serve<R: AsyncRead + Unpin>(
    reader: R,
    writer: ResponseWriter,
    broker: Arc<BrokerContext>,
    security: Arc<ListenerSecurity>,
    peer: SocketAddr,
    session: Session,
) {
    let (queue, pending) = mpsc::channel::<Queued>(MAX_IN_FLIGHT);
    let metrics = broker.metrics.clone();
    let max_frame = broker.config.socket_request_max_bytes as usize;
    let idle = Duration::from_millis(broker.config.connections_max_idle_ms.max(1) as u64);
    let reader = read_requests(
        reader,
        queue,
        broker,
        security,
        (peer, session),
        max_frame,
        idle,
    );
    let writer = write_responses(writer, pending, peer, idle, metrics);
    // The writer ends when the reader drops the queue and every response
    // is out, or on a write error.
    let _ = tokio::join!(reader, writer);
}

async fn read_requests<R: AsyncRead + Unpin>(
    mut reader: R,
    queue: mpsc::Sender<Queued>,
    broker: Arc<BrokerContext>,
    security: Arc<ListenerSecurity>,
    (peer, session): (SocketAddr, Session),
    max_frame: usize,
    idle: Duration,
) {
    let produce_order = ProduceOrder::default();
    let mute = Arc::new(ChannelMute::default());
    let listener: Arc<str> = Arc::from(security.listener.as_str());
    // User:ANONYMOUS on PLAINTEXT, the certificate's on SSL; SASL
    // replaces it.
    let mut session = Arc::new(session);
    // KIP-368: a SASL session lives `connections.max.reauth.ms` (0: for
    // ever); the client re-authenticates on the connection before then,
    // as the same principal, or is closed at its next request.
    let lifetime_ms = broker.config.connections_max_reauth_ms.max(0);
    let mut expires: Option<std::time::Instant> = None;
    let mut gate = security
        .protocol
        .is_sasl()
        .then(|| SaslGate::new(lifetime_ms, None));
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
        // A quota's delay: no request is taken until it has passed.
        mute.wait().await;
        let received = Instant::now();
        if gate.is_none() && expires.is_some() && api_key_of(&frame) == Some(ApiKey::SaslHandshake)
        {
            gate = Some(SaslGate::new(lifetime_ms, Some(session.principal.clone())));
        }
        if gate.is_none() && expires.is_some_and(|at| std::time::Instant::now() >= at) {
            log::info!(
                "closing connection from {peer}: its SASL session of {} ended {lifetime_ms} ms after it authenticated without re-authentication (connections.max.reauth.ms)",
                session.principal
            );
            return;
        }
        if let Some(sasl) = gate.as_mut() {
            match sasl.take(&frame, &security, peer).await {
                Gate::Pass => {}
                Gate::Answer { frame, then } => {
                    let ready = Queued {
                        response: actix_rt::spawn(async move { (Ok(frame), Instant::now()) }),
                        timing: None,
                    };
                    if queue.send(ready).await.is_err() {
                        return;
                    }
                    match then {
                        Then::Continue => continue,
                        Then::Close => return,
                        Then::Authenticated(principal) => {
                            let before = gate.as_ref().and_then(|g| g.reauthenticating.clone());
                            match before {
                                Some(before) if before != principal => {
                                    log::warn!(
                                        "closing connection from {peer}: it re-authenticated as {principal}, not {before}"
                                    );
                                    return;
                                }
                                Some(_) => log::info!(
                                    "{peer} re-authenticated as {principal} on {}",
                                    security.listener
                                ),
                                None => log::info!(
                                    "{peer} authenticated as {principal} on {}",
                                    security.listener
                                ),
                            }
                            expires = (lifetime_ms > 0).then(|| {
                                std::time::Instant::now()
                                    + Duration::from_millis(lifetime_ms as u64)
                            });
                            session = Arc::new(Session {
                                principal,
                                host: peer.ip().to_canonical().to_string(),
                            });
                            gate = None;
                            continue;
                        }
                    }
                }
                Gate::Close(reason) => {
                    log::warn!("closing connection from {peer}: {reason}");
                    return;
                }
            }
        }
        let pending = match protocol::decode_request(frame) {
            Ok(request) => {
                let broker = broker.clone();
                let names = api::RequestNames::of(&request);
                // Tickets are taken in read order: appends follow it.
                let origin = RequestOrigin {
                    peer,
                    session: session.clone(),
                    produce_turn: matches!(request.api, ApiKey::Produce)
                        .then(|| produce_order.ticket()),
                    mute: mute.clone(),
                    listener: listener.clone(),
                    received,
                };
                Queued {
                    response: actix_rt::spawn(async move {
                        let answer = api::handle(&broker, request, origin).await;
                        (answer, Instant::now())
                    }),
                    timing: Some((names, received)),
                }
            }
            Err(ProtocolError::UnsupportedVersion {
                api: kafka_protocol::messages::ApiKey::ApiVersions,
                correlation_id,
                ..
            }) => Queued {
                response: actix_rt::spawn(async move {
                    let answer = protocol::unsupported_api_versions_response(correlation_id);
                    (answer.map(Some), Instant::now())
                }),
                timing: None,
            },
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
    mut writer: ResponseWriter,
    mut pending: mpsc::Receiver<Queued>,
    peer: SocketAddr,
    stall_limit: Duration,
    metrics: Arc<crate::metrics::BrokerMetrics>,
) {
    use crate::metrics::RequestTime;
    while let Some(Queued { response, timing }) = pending.recv().await {
        let (answer, ready) = match response.await {
            Ok((answer, ready)) => (Ok(answer), ready),
            Err(e) => (Err(e), Instant::now()),
        };
        let writing = Instant::now();
        // Kafka's RequestMetrics: a request with no answer due ends here.
        let times = |written: Instant| {
            if let Some((names, received)) = &timing {
                let requests = &metrics.requests;
                names.each(|name| {
                    let queued = writing.saturating_duration_since(ready);
                    requests.time(name, RequestTime::ResponseQueue, queued);
                    requests.time(name, RequestTime::ResponseSend, written - writing);
                    requests.time(name, RequestTime::Total, written - *received);
                });
            }
        };
        let frame = match answer {
            Ok(Ok(Some(frame))) => frame,
            Ok(Ok(None)) => {
                times(Instant::now());
                continue;
            }
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
            Ok(Ok(())) => times(Instant::now()),
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

/// The SASL exchange of one connection, until it authenticated.
struct SaslGate {
    exchange: SaslExchange,
    /// After a v0 SaslHandshake the token comes as a bare frame.
    bare_token: bool,
    /// `connections.max.reauth.ms`, told to v1+ clients (0: none).
    session_lifetime_ms: i64,
    /// On a re-authentication, the principal the session had.
    reauthenticating: Option<KafkaPrincipal>,
}

/// The API key of a request frame (its first two bytes).
fn api_key_of(frame: &bytes::Bytes) -> Option<ApiKey> {
    let key = i16::from_be_bytes([*frame.first()?, *frame.get(1)?]);
    ApiKey::try_from(key).ok()
}

/// What the reader does with a frame on a SASL listener.
enum Gate {
    /// Not part of the exchange (ApiVersions): handle it as usual.
    Pass,
    /// Answered here; then go on, close, or take the principal.
    Answer {
        frame: Option<ResponseFrame>,
        then: Then,
    },
    /// Out of place: close without an answer.
    Close(String),
}

enum Then {
    Continue,
    Close,
    Authenticated(KafkaPrincipal),
}

impl SaslGate {
    fn new(session_lifetime_ms: i64, reauthenticating: Option<KafkaPrincipal>) -> SaslGate {
        SaslGate {
            exchange: SaslExchange::AwaitingHandshake,
            bare_token: false,
            session_lifetime_ms,
            reauthenticating,
        }
    }

    /// One SaslAuthenticate token (or v0 bare token) through the exchange:
    /// SCRAM's client-first needs the user's credential looked up first.
    async fn step(&mut self, token: &[u8], security: &ListenerSecurity) -> SaslStep {
        let Some(mechanism) = self.exchange.awaiting_scram_first() else {
            return self.exchange.authenticate(token, &security.plain);
        };
        let credential = match scram::client_first_user(token) {
            Ok(user) => match &security.credentials {
                Some(credentials) => credentials.credential(&user, mechanism).await,
                None => None,
            },
            Err(_) => None,
        };
        let nonce = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        self.exchange
            .scram_first(mechanism, token, credential, &nonce)
    }

    async fn take(
        &mut self,
        frame: &bytes::Bytes,
        security: &ListenerSecurity,
        peer: SocketAddr,
    ) -> Gate {
        use kafka_protocol::error::ResponseError;
        use kafka_protocol::messages::{SaslAuthenticateResponse, SaslHandshakeResponse};
        use kafka_protocol::protocol::StrBytes;
        if self.bare_token {
            // Kafka's v0 exchange: the bare token, answered by a bare
            // (empty, for PLAIN) token; a failure just closes.
            return match self.step(frame, security).await {
                SaslStep::Authenticate(Ok(principal)) => Gate::Answer {
                    frame: Some(bare_frame(&[])),
                    then: Then::Authenticated(principal),
                },
                SaslStep::Complete { principal, token } => Gate::Answer {
                    frame: Some(bare_frame(&token)),
                    then: Then::Authenticated(principal),
                },
                SaslStep::Challenge(token) => Gate::Answer {
                    frame: Some(bare_frame(&token)),
                    then: Then::Continue,
                },
                SaslStep::Authenticate(Err(e)) => Gate::Close(e.to_string()),
                step => Gate::Close(why_of(&step)),
            };
        }
        let request = match protocol::decode_request(frame.clone()) {
            Ok(request) => request,
            // The usual path answers an ApiVersions it cannot decode (the
            // client retries an older version) and closes on the rest.
            Err(_) => return Gate::Pass,
        };
        let (api, version, correlation_id) =
            (request.api, request.version(), request.correlation_id());
        let encode = |response: &dyn EncodeAnswer| response.encode(api, version, correlation_id);
        match &request.body {
            Request::ApiVersions(_) => Gate::Pass,
            Request::SaslHandshake(r) => {
                let step = self.exchange.handshake(&r.mechanism, &security.mechanisms);
                let SaslStep::Handshake { error_code } = step else {
                    return Gate::Close(why_of(&step));
                };
                let response = SaslHandshakeResponse::default()
                    .with_error_code(error_code)
                    .with_mechanisms(
                        security
                            .mechanisms
                            .iter()
                            .map(|m| StrBytes::from_string(m.clone()))
                            .collect(),
                    );
                if error_code != 0 {
                    log::warn!(
                        "closing connection from {peer}: unsupported SASL mechanism {}",
                        r.mechanism
                    );
                    return Gate::Answer {
                        frame: encode(&response),
                        then: Then::Close,
                    };
                }
                self.bare_token = version == 0;
                Gate::Answer {
                    frame: encode(&response),
                    then: Then::Continue,
                }
            }
            Request::SaslAuthenticate(r) => {
                let token = r.auth_bytes.clone();
                match self.step(&token, security).await {
                    SaslStep::Authenticate(Ok(principal)) => Gate::Answer {
                        frame: encode(&self.authenticated(version)),
                        then: Then::Authenticated(principal),
                    },
                    SaslStep::Complete { principal, token } => Gate::Answer {
                        frame: encode(
                            &self
                                .authenticated(version)
                                .with_auth_bytes(bytes::Bytes::from(token)),
                        ),
                        then: Then::Authenticated(principal),
                    },
                    SaslStep::Challenge(token) => Gate::Answer {
                        frame: encode(
                            &SaslAuthenticateResponse::default()
                                .with_auth_bytes(bytes::Bytes::from(token)),
                        ),
                        then: Then::Continue,
                    },
                    SaslStep::Authenticate(Err(e)) => {
                        log::warn!("closing connection from {peer}: {e}");
                        Gate::Answer {
                            frame: encode(
                                &SaslAuthenticateResponse::default()
                                    .with_error_code(ResponseError::SaslAuthenticationFailed.code())
                                    .with_error_message(Some(StrBytes::from_string(e.to_string()))),
                            ),
                            then: Then::Close,
                        }
                    }
                    step => Gate::Close(why_of(&step)),
                }
            }
            _ => Gate::Close(format!("{api:?} before SASL authentication")),
        }
    }
}

impl SaslGate {
    /// A successful SaslAuthenticate answer: from v1 on it carries the
    /// session's lifetime (KIP-368), which the client re-authenticates by.
    fn authenticated(&self, version: i16) -> kafka_protocol::messages::SaslAuthenticateResponse {
        let response = kafka_protocol::messages::SaslAuthenticateResponse::default();
        if version >= 1 {
            response.with_session_lifetime_ms(self.session_lifetime_ms)
        } else {
            response
        }
    }
}

fn why_of(step: &SaslStep) -> String {
    match step {
        SaslStep::Refuse(why) => (*why).to_string(),
        _ => "an unexpected SASL step".to_string(),
    }
}

/// A length-prefixed frame without a response header (SASL v0 tokens).
fn bare_frame(token: &[u8]) -> ResponseFrame {
    let mut bytes = Vec::with_capacity(4 + token.len());
    bytes.extend_from_slice(&(token.len() as u32).to_be_bytes());
    bytes.extend_from_slice(token);
    ResponseFrame {
        chunks: vec![protocol::ResponseChunk::Bytes(bytes::Bytes::from(bytes))],
    }
}

/// Encodes the exchange's answers (each a different response type).
trait EncodeAnswer {
    fn encode(&self, api: ApiKey, version: i16, correlation_id: i32) -> Option<ResponseFrame>;
}

impl<R: kafka_protocol::protocol::Encodable + kafka_protocol::protocol::HeaderVersion> EncodeAnswer
    for R
{
    fn encode(&self, api: ApiKey, version: i16, correlation_id: i32) -> Option<ResponseFrame> {
        match protocol::encode_response(api, version, correlation_id, self, Vec::new()) {
            Ok(frame) => Some(frame),
            Err(e) => {
                log::error!("encoding a SASL answer failed: {e}");
                None
            }
        }
    }
}
