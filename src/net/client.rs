//! A broker's client connection to another broker: one request at a time,
//! typed with `kafka-protocol`'s messages (the controller's channels send
//! LeaderAndIsr and friends through it, replica fetchers Fetch and
//! OffsetForLeaderEpoch).
//!
//! It never retries and never interprets an answer: a failed exchange drops
//! the connection (the next call reconnects) and returns the error; what
//! to do about it is the caller's business.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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
    connection: Option<TcpStream>,
    correlation_id: i32,
    io_timeout: Duration,
    max_response_bytes: usize,
}

impl BrokerClient {
    pub fn new(
        address: String,
        client_id: String,
        io_timeout: Duration,
        max_response_bytes: usize,
    ) -> BrokerClient {
        BrokerClient {
            address,
            client_id,
            connection: None,
            correlation_id: 0,
            io_timeout,
            max_response_bytes,
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
        let mut stream = match self.connection.take() {
            Some(stream) => stream,
            None => {
                match tokio::time::timeout(self.io_timeout, TcpStream::connect(&self.address)).await
                {
                    Ok(Ok(stream)) => {
                        let _ = stream.set_nodelay(true);
                        stream
                    }
                    Ok(Err(e)) => return Err(self.connect_error(e.to_string())),
                    Err(_) => return Err(self.connect_error("timed out".into())),
                }
            }
        };
        let exchanged = tokio::time::timeout(
            self.io_timeout,
            exchange(&mut stream, &frame, self.max_response_bytes),
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
        let response =
            Resp::decode(&mut body, version).map_err(|e| self.decode_error(e.to_string()))?;
        self.connection = Some(stream);
        Ok(response)
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
    stream: &mut TcpStream,
    frame: &Bytes,
    max_response_bytes: usize,
) -> std::io::Result<Bytes> {
    stream.write_all(frame).await?;
    let size = stream.read_i32().await?;
    let size = usize::try_from(size)
        .ok()
        .filter(|&s| s <= max_response_bytes)
        .ok_or_else(|| std::io::Error::other(format!("response size {size} out of range")))?;
    let mut body = vec![0u8; size];
    stream.read_exact(&mut body).await?;
    Ok(Bytes::from(body))
}
