//! A broker's client connection to another broker: one request at a time,
//! typed with `kafka-protocol`'s messages (the controller's channels send
//! LeaderAndIsr and friends through it, replica fetchers Fetch and
//! OffsetForLeaderEpoch).
//!
//! It never retries and never interprets an answer: a failed exchange drops
//! the connection (the next call reconnects) and returns the error; what
//! to do about it is the caller's business. A new connection is secured as
//! the inter-broker listener says (`inter_broker`): TLS, then the SASL
//! login (SaslHandshake v1 and SaslAuthenticate v2, PLAIN or SCRAM with
//! the server's signature checked) before the first request.

use std::sync::Arc;

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::inter_broker::{BrokerIo, InterBrokerSecurity};
use crate::protocol::encode_request;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("connecting to {address}: {reason}")]
    Connect { address: String, reason: String },
    #[error("talking to {address}: {reason}")]
    Exchange { address: String, reason: String },
    #[error("{address} sent an answer that does not decode: {reason}")]
    Decode { address: String, reason: String },
}

pub struct BrokerClient {
    address: String,
    client_id: String,
    connection: Option<Box<dyn BrokerIo>>,
    correlation_id: i32,
    io_timeout: Duration,
    max_response_bytes: usize,
    security: Arc<InterBrokerSecurity>,
}

impl BrokerClient {
    pub fn new(
        address: String,
        client_id: String,
        io_timeout: Duration,
        max_response_bytes: usize,
        security: Arc<InterBrokerSecurity>,
    ) -> BrokerClient {
        BrokerClient {
            address,
            client_id,
            connection: None,
            correlation_id: 0,
            io_timeout,
            max_response_bytes,
            security,
        }
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// Point the client at another address (the broker re-registered with
    /// a new one); the old connection goes.
    pub fn set_address(&mut self, address: String) {
        if address != self.address {
            self.address = address;
            self.connection = None;
        }
    }

    /// Send `request` as `api` version `version` and decode the answer.
    pub async fn call<Req, Resp>(
        &mut self,
        api: ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp, ClientError>
    where
        Req: Encodable + HeaderVersion,
        Resp: Decodable,
    {
        let mut stream = match self.connection.take() {
            Some(stream) => stream,
            None => self.connect().await?,
        };
        let response = self.round_trip(&mut stream, api, version, request).await?;
        self.connection = Some(stream);
        Ok(response)
    }

    /// A new connection, secured and logged in.
    async fn connect(&mut self) -> Result<Box<dyn BrokerIo>, ClientError> {
        let security = self.security.clone();
        let mut stream =
            match tokio::time::timeout(self.io_timeout, security.connect(&self.address)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => return Err(self.connect_error(e)),
                Err(_) => return Err(self.connect_error("timed out".into())),
            };
        if let Some(login) = &security.login {
            self.log_in(&mut stream, login)
                .await
                .map_err(|e| self.connect_error(format!("SASL {}: {e}", login.mechanism)))?;
        }
        Ok(stream)
    }

    /// The SASL exchange as Kafka's clients run it: SaslHandshake v1,
    /// then SaslAuthenticate v2 with each token.
    async fn log_in(
        &mut self,
        stream: &mut Box<dyn BrokerIo>,
        login: &crate::config::InterBrokerLogin,
    ) -> Result<(), String> {
        use crate::security::scram::{ScramClient, ScramMechanism};
        use kafka_protocol::messages::{SaslHandshakeRequest, SaslHandshakeResponse};
        let handshake: SaslHandshakeResponse = self
            .round_trip(
                stream,
                ApiKey::SaslHandshake,
                1,
                &SaslHandshakeRequest::default()
                    .with_mechanism(StrBytes::from_string(login.mechanism.clone())),
            )
            .await
            .map_err(|e| e.to_string())?;
        if handshake.error_code != 0 {
            return Err(format!(
                "refused with error {} (the listener offers {:?})",
                handshake.error_code, handshake.mechanisms
            ));
        }
        let Some(mechanism) = ScramMechanism::from_name(&login.mechanism) else {
            let token = format!("\0{}\0{}", login.user, login.password.0);
            return self.authenticate(stream, token.into_bytes()).await.map(|_| ());
        };
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let (mut scram, first) =
            ScramClient::start(mechanism, &login.user, &login.password.0, &nonce);
        let server_first = self.authenticate(stream, first.into_bytes()).await?;
        let last = scram
            .respond(&server_first)
            .map_err(|e| e.to_string())?;
        let server_final = self.authenticate(stream, last.into_bytes()).await?;
        scram.verify(&server_final).map_err(|e| e.to_string())
    }

    /// One SaslAuthenticate token and the server's answer token.
    async fn authenticate(
        &mut self,
        stream: &mut Box<dyn BrokerIo>,
        token: Vec<u8>,
    ) -> Result<Vec<u8>, String> {
        use kafka_protocol::messages::{SaslAuthenticateRequest, SaslAuthenticateResponse};
        let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
        let response: SaslAuthenticateResponse = self
            .round_trip(stream, ApiKey::SaslAuthenticate, 2, &request)
            .await
            .map_err(|e| e.to_string())?;
        match response.error_code {
            0 => Ok(response.auth_bytes.to_vec()),
            code => Err(format!(
                "refused with error {code}: {}",
                response.error_message.as_deref().unwrap_or("")
            )),
        }
    }

    /// One request and its answer on `stream`.
    async fn round_trip<Req, Resp>(
        &mut self,
        stream: &mut Box<dyn BrokerIo>,
        api: ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp, ClientError>
    where
        Req: Encodable + HeaderVersion,
        Resp: Decodable,
    {
        self.correlation_id = self.correlation_id.wrapping_add(1);
        let correlation_id = self.correlation_id;
        let header = RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_string(self.client_id.clone())));
        let frame = encode_request(&header, api, request)
            .map_err(|e| self.exchange_error(e.to_string()))?
            .freeze();
        let exchanged = tokio::time::timeout(
            self.io_timeout,
            exchange(stream, &frame, self.max_response_bytes),
        )
        .await;
        let mut body = match exchanged {
            Ok(Ok(body)) => body,
            Ok(Err(e)) => return Err(self.exchange_error(e.to_string())),
            Err(_) => return Err(self.exchange_error("no answer in time".into())),
        };
        let response_header =
            ResponseHeader::decode(&mut body, api.response_header_version(version))
                .map_err(|e| self.decode_error(format!("response header: {e}")))?;
        if response_header.correlation_id != correlation_id {
            return Err(self.decode_error(format!(
                "correlation id {} answers request {correlation_id}",
                response_header.correlation_id
            )));
        }
        Resp::decode(&mut body, version).map_err(|e| self.decode_error(e.to_string()))
    }

    fn connect_error(&self, reason: String) -> ClientError {
        ClientError::Connect {
            address: self.address.clone(),
            reason,
        }
    }

    fn exchange_error(&self, reason: String) -> ClientError {
        ClientError::Exchange {
            address: self.address.clone(),
            reason,
        }
    }

    fn decode_error(&self, reason: String) -> ClientError {
        ClientError::Decode {
            address: self.address.clone(),
            reason,
        }
    }
}

/// Writes one frame and reads the response frame.
async fn exchange(
    stream: &mut Box<dyn BrokerIo>,
    frame: &Bytes,
    max_response_bytes: usize,
) -> std::io::Result<Bytes> {
    stream.write_all(frame).await?;
    // TLS holds records back until flushed.
    stream.flush().await?;
    let size = stream.read_i32().await?;
    let size = usize::try_from(size)
        .ok()
        .filter(|&s| s <= max_response_bytes)
        .ok_or_else(|| std::io::Error::other(format!("response size {size} out of range")))?;
    let mut body = vec![0u8; size];
    stream.read_exact(&mut body).await?;
    Ok(Bytes::from(body))
}
