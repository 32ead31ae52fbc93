//! How a broker reaches another: the inter-broker listener's security, as
//! Kafka's inter-broker clients take it. On SSL and SASL_SSL the
//! connection starts with TLS (the listener's own truststore checks the
//! peer, its keystore answers a request for a client certificate); on
//! SASL_PLAINTEXT and SASL_SSL the broker then logs in with
//! `sasl.mechanism.inter.broker.protocol` as the listener's JAAS
//! `username`, and is that principal on the other side (put it in
//! `super.users`, as Kafka needs). Built once at start-up; every
//! [`super::client::BrokerClient`] holds it.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::config::{BrokerConfig, InterBrokerLogin, SecurityProtocol};
use crate::security::tls::TlsError;

/// A connection to another broker: a socket or a TLS stream over one.
pub trait BrokerIo: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> BrokerIo for T {}

/// Why the inter-broker listener's security could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum InterBrokerSecurityError {
    /// The login (mechanism, JAAS line) is invalid.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// Its truststore or keystore cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// The inter-broker listener's security.
pub struct InterBrokerSecurity {
    /// The listener's protocol.
    pub protocol: SecurityProtocol,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The SASL login, on SASL listeners.
    pub login: Option<InterBrokerLogin>,
}

impl std::fmt::Debug for InterBrokerSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterBrokerSecurity")
            .field("protocol", &self.protocol)
            .field("login", &self.login)
            .finish_non_exhaustive()
    }
}

impl InterBrokerSecurity {
    /// PLAINTEXT between brokers.
    pub fn plaintext() -> Arc<InterBrokerSecurity> {
        Arc::new(InterBrokerSecurity {
            protocol: SecurityProtocol::Plaintext,
            tls: None,
            login: None,
        })
    }

    /// A client's security without TLS: PLAINTEXT, or SASL_PLAINTEXT with
    /// `login` (the command-line tools).
    pub fn client(protocol: SecurityProtocol, login: Option<InterBrokerLogin>) -> Arc<Self> {
        Arc::new(InterBrokerSecurity {
            protocol,
            tls: None,
            login,
        })
    }

    /// The security of `config`'s inter-broker listener (PLAINTEXT when it
    /// names none this broker has: the embedded store's single broker).
    pub fn of(config: &BrokerConfig) -> Result<Arc<InterBrokerSecurity>, InterBrokerSecurityError> {
        let Some(listener) = config.inter_broker_listener().cloned() else {
            return Ok(Self::plaintext());
        };
        let protocol = listener.security_protocol;
        let tls = match protocol {
            SecurityProtocol::Ssl | SecurityProtocol::SaslSsl => Some(
                crate::security::tls::client_config(&config.ssl_config(&listener)?)?,
            ),
            _ => None,
        };
        let login = if protocol.is_sasl() {
            Some(config.inter_broker_login()?)
        } else {
            None
        };
        Ok(Arc::new(InterBrokerSecurity {
            protocol,
            tls,
            login,
        }))
    }

    /// A connection to `address` (`host:port`), TLS handshake done; SASL
    /// is the client's to run on it.
    pub async fn connect(&self, address: &str) -> Result<Box<dyn BrokerIo>, String> {
        let stream = TcpStream::connect(address)
            .await
            .map_err(|e| e.to_string())?;
        let _ = stream.set_nodelay(true);
        let Some(tls) = &self.tls else {
            return Ok(Box::new(stream));
        };
        let host = address
            .rsplit_once(':')
            .map_or(address, |(host, _)| host)
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let name = rustls_pki_types::ServerName::try_from(host)
            .map_err(|e| format!("{address} is not a name TLS can check: {e}"))?;
        let stream = tokio_rustls::TlsConnector::from(tls.clone())
            .connect(name, stream)
            .await
            .map_err(|e| format!("TLS handshake: {e}"))?;
        Ok(Box::new(stream))
    }
}
