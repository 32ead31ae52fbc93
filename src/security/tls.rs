//! TLS for SSL and SASL_SSL listeners, with rustls (no OpenSSL): the
//! listener's keystore and truststore read as Kafka reads them (PEM files
//! or inline PEM, an encrypted PKCS#8 key with `ssl.key.password`, PKCS12
//! files as keytool and openssl write them), `ssl.client.auth`,
//! `ssl.enabled.protocols` and `ssl.cipher.suites`; the client's principal
//! from its certificate (`principal`). A keystore changed on disk is
//! picked up by [`TlsListener::reload`], which the broker calls when its
//! dynamic config changes, as Kafka reloads on an AlterConfigs; a keystore
//! that no longer loads keeps the old one in service.

use std::path::Path;
use std::sync::{Arc, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedProtocolVersion};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::principal::{subject_of, PrincipalMapper};
use super::KafkaPrincipal;
use crate::config::{ClientAuth, Password, SslConfig, StoreType};

/// Why a listener's TLS could not be set up.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)] // The fields say what they hold.
pub enum TlsError {
    /// A store's file cannot be read.
    #[error("listener {listener}: cannot read the {what} {path}: {source}")]
    Read {
        listener: String,
        what: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The keystore holds no usable key and chain.
    #[error("listener {listener}: the keystore: {why}")]
    Keystore { listener: String, why: String },
    /// The truststore holds no usable certificate.
    #[error("listener {listener}: the truststore: {why}")]
    Truststore { listener: String, why: String },
    /// Protocols, suites or mapping rules rustls cannot take.
    #[error("listener {listener}: {why}")]
    Settings { listener: String, why: String },
}

/// What a keystore holds: the broker's chain and key.
struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

/// The bytes a listener's TLS was built from, to tell a changed store.
#[derive(Debug, Clone, PartialEq, Eq)]
struct StoreBytes {
    keystore: Vec<u8>,
    truststore: Vec<u8>,
}

/// One TLS listener: its settings and the acceptor in service.
pub struct TlsListener {
    settings: RwLock<Active>,
    mapper: PrincipalMapper,
}

struct Active {
    config: SslConfig,
    bytes: StoreBytes,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl std::fmt::Debug for TlsListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsListener").finish_non_exhaustive()
    }
}

impl TlsListener {
    /// Reads the stores of `config` and builds its acceptor.
    pub fn new(config: SslConfig) -> Result<TlsListener, TlsError> {
        let mapper = PrincipalMapper::parse(&config.principal_mapping_rules).map_err(|why| {
            TlsError::Settings {
                listener: config.listener.clone(),
                why: format!("ssl.principal.mapping.rules: {why}"),
            }
        })?;
        let bytes = store_bytes(&config)?;
        let acceptor = acceptor(&config, &bytes)?;
        for ignored in ignored_protocols(&config) {
            log::warn!(
                "listener {}: ssl.enabled.protocols names {ignored}, which rustls does not offer; it is left out",
                config.listener
            );
        }
        Ok(TlsListener {
            settings: RwLock::new(Active {
                config,
                bytes,
                acceptor,
            }),
            mapper,
        })
    }

    /// The acceptor in service.
    pub fn acceptor(&self) -> Option<tokio_rustls::TlsAcceptor> {
        self.settings.read().ok().map(|a| a.acceptor.clone())
    }

    /// Whether `config` (the listener's settings now) or the stores on
    /// disk differ from what is in service: then a new acceptor takes over
    /// for the next connections. `Ok(false)`: nothing changed.
    pub fn reload(&self, config: SslConfig) -> Result<bool, TlsError> {
        let bytes = store_bytes(&config)?;
        {
            let active = self.settings.read().map_err(|_| TlsError::Settings {
                listener: config.listener.clone(),
                why: "the TLS settings lock is poisoned".into(),
            })?;
            if active.config == config && active.bytes == bytes {
                return Ok(false);
            }
        }
        let acceptor = acceptor(&config, &bytes)?;
        if let Ok(mut active) = self.settings.write() {
            *active = Active {
                config,
                bytes,
                acceptor,
            };
        }
        Ok(true)
    }

    /// A TLS client's principal: `User:<mapped subject>` with a
    /// certificate, `User:ANONYMOUS` without one (`ssl.client.auth` none
    /// or requested), as Kafka's `DefaultKafkaPrincipalBuilder`.
    pub fn principal(
        &self,
        peer_certificates: Option<&[CertificateDer<'_>]>,
    ) -> Result<KafkaPrincipal, String> {
        let Some(leaf) = peer_certificates.and_then(|chain| chain.first()) else {
            return Ok(KafkaPrincipal::anonymous());
        };
        let subject = subject_of(leaf)?;
        Ok(KafkaPrincipal::user(&self.mapper.name_of(&subject)?))
    }
}

fn read(listener: &str, what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        listener: listener.to_string(),
        what,
        path: path.display().to_string(),
        source,
    })
}

fn store_bytes(config: &SslConfig) -> Result<StoreBytes, TlsError> {
    let listener = &config.listener;
    let keystore = match (&config.keystore_location, &config.keystore_key) {
        (Some(path), _) => read(listener, "keystore", path)?,
        (None, Some(Password(key))) => {
            let chain = config
                .keystore_certificate_chain
                .as_ref()
                .map_or("", |c| c.0.as_str());
            format!("{key}\n{chain}").into_bytes()
        }
        (None, None) => Vec::new(),
    };
    let truststore = match (&config.truststore_location, &config.truststore_certificates) {
        (Some(path), _) => read(listener, "truststore", path)?,
        (None, Some(Password(certificates))) => certificates.clone().into_bytes(),
        (None, None) => Vec::new(),
    };
    Ok(StoreBytes {
        keystore,
        truststore,
    })
}

fn acceptor(config: &SslConfig, bytes: &StoreBytes) -> Result<tokio_rustls::TlsAcceptor, TlsError> {
    let listener = config.listener.clone();
    let settings = |why: String| TlsError::Settings {
        listener: listener.clone(),
        why,
    };
    let identity = identity(config, &bytes.keystore)?;
    let provider = Arc::new(provider(config).map_err(settings)?);
    let versions = protocol_versions(config).map_err(settings)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| settings(format!("ssl.enabled.protocols and ssl.cipher.suites: {e}")))?;
    let builder = match config.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        auth => {
            let roots = Arc::new(roots(config, &bytes.truststore)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
            let verifier = if auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| truststore_error(config, e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let server = builder
        .with_single_cert(identity.chain, identity.key)
        .map_err(|e| {
            keystore_error(config, format!("the key does not fit its certificate: {e}"))
        })?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(server)))
}

fn keystore_error(config: &SslConfig, why: String) -> TlsError {
    TlsError::Keystore {
        listener: config.listener.clone(),
        why,
    }
}

fn truststore_error(config: &SslConfig, why: String) -> TlsError {
    TlsError::Truststore {
        listener: config.listener.clone(),
        why,
    }
}

/// The broker's chain and key from its keystore.
fn identity(config: &SslConfig, keystore: &[u8]) -> Result<Identity, TlsError> {
    let fail = |why: String| keystore_error(config, why);
    match config.keystore_type {
        StoreType::Pem => {
            let chain = pem_certificates(keystore).map_err(fail)?;
            if chain.is_empty() {
                return Err(fail("it holds no certificate".into()));
            }
            let key = pem_key(keystore, config.key_password.as_ref()).map_err(fail)?;
            Ok(Identity { chain, key })
        }
        StoreType::Pkcs12 => {
            let store = open_pkcs12(keystore, config.keystore_password.as_ref()).map_err(fail)?;
            let (_, chain) = store
                .private_key_chain()
                .ok_or_else(|| fail("it holds no private key entry".into()))?;
            let certificates: Vec<CertificateDer<'static>> = chain
                .certs()
                .iter()
                .map(|c| CertificateDer::from(c.as_der().to_vec()))
                .collect();
            if certificates.is_empty() {
                return Err(fail("its key entry has no certificate".into()));
            }
            Ok(Identity {
                chain: certificates,
                key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec())),
            })
        }
        StoreType::Jks => Err(fail("JKS keystores cannot be read".into())),
    }
}

/// The certificates of PEM text, in order.
fn pem_certificates(text: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(text)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("a certificate cannot be read: {e}"))
}

/// A PKCS12 store (one password for the store and its entries, as
/// keytool and `openssl pkcs12 -export` write them).
fn open_pkcs12(
    bytes: &[u8],
    password: Option<&Password>,
) -> Result<p12_keystore::KeyStore, String> {
    let password = password.map_or("", |p| p.0.as_str());
    p12_keystore::KeyStore::from_pkcs12(bytes, password, p12_keystore::Pkcs12ImportPolicy::Relaxed)
        .map_err(|e| format!("not a PKCS12 store it can open with its password: {e}"))
}

/// The private key of PEM text: plain (PKCS#8, PKCS#1, SEC1) or
/// `ENCRYPTED PRIVATE KEY` (PKCS#8 with PBES2), which needs the password.
fn pem_key(text: &[u8], password: Option<&Password>) -> Result<PrivateKeyDer<'static>, String> {
    const BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
    const END: &str = "-----END ENCRYPTED PRIVATE KEY-----";
    let utf8 = String::from_utf8_lossy(text);
    if let Some(start) = utf8.find(BEGIN) {
        let end = utf8[start..]
            .find(END)
            .map(|i| start + i + END.len())
            .ok_or("the encrypted key has no END line")?;
        let Some(Password(password)) = password else {
            return Err("the key is encrypted and ssl.key.password is not set".into());
        };
        let (_, der) = pkcs8::der::SecretDocument::from_pem(&utf8[start..end])
            .map_err(|e| format!("the encrypted key cannot be read: {e}"))?;
        let encrypted = pkcs8::EncryptedPrivateKeyInfoRef::try_from(der.as_bytes())
            .map_err(|e| format!("the encrypted key cannot be read: {e}"))?;
        let document = encrypted.decrypt(password.as_bytes()).map_err(|_| {
            "the encrypted key cannot be decrypted with ssl.key.password".to_string()
        })?;
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            document.as_bytes().to_vec(),
        )));
    }
    PrivateKeyDer::from_pem_slice(text).map_err(|e| format!("it holds no private key: {e}"))
}

/// The certificates client certificates are checked against.
fn roots(config: &SslConfig, truststore: &[u8]) -> Result<RootCertStore, TlsError> {
    let fail = |why: String| truststore_error(config, why);
    let certificates: Vec<CertificateDer<'static>> = match config.truststore_type {
        StoreType::Pem => pem_certificates(truststore).map_err(fail)?,
        StoreType::Pkcs12 => {
            let store =
                open_pkcs12(truststore, config.truststore_password.as_ref()).map_err(fail)?;
            store
                .entries()
                .filter_map(|(_, entry)| match entry {
                    p12_keystore::KeyStoreEntry::Certificate(c) => {
                        Some(CertificateDer::from(c.as_der().to_vec()))
                    }
                    _ => None,
                })
                .collect()
        }
        StoreType::Jks => return Err(fail("JKS truststores cannot be read".into())),
    };
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certificates);
    if added == 0 {
        return Err(fail("it holds no usable certificate".into()));
    }
    Ok(roots)
}

/// `ssl.enabled.protocols` names rustls does not offer (TLSv1, TLSv1.1).
fn ignored_protocols(config: &SslConfig) -> Vec<String> {
    config
        .enabled_protocols
        .iter()
        .filter(|p| !matches!(p.as_str(), "TLSv1.2" | "TLSv1.3"))
        .cloned()
        .collect()
}

fn protocol_versions(config: &SslConfig) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    let mut versions = Vec::new();
    for name in &config.enabled_protocols {
        match name.as_str() {
            "TLSv1.3" => versions.push(&rustls::version::TLS13),
            "TLSv1.2" => versions.push(&rustls::version::TLS12),
            _ => {}
        }
    }
    if versions.is_empty() {
        return Err(format!(
            "ssl.enabled.protocols ({}) names neither TLSv1.2 nor TLSv1.3",
            config.enabled_protocols.join(",")
        ));
    }
    Ok(versions)
}

/// ring's suites, only those `ssl.cipher.suites` names when it names any
/// (IANA names, as Java takes them: `TLS_AES_128_GCM_SHA256`,
/// `TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`).
fn provider(config: &SslConfig) -> Result<CryptoProvider, String> {
    // ring, not aws-lc-rs (rustls' default, which needs a longer native
    // build); rustls 0.23.48 marks ring's provider deprecated for lacking
    // post-quantum key exchange, which Kafka's clients do not offer either.
    #[allow(deprecated)]
    let mut provider = rustls::crypto::ring::default_provider();
    if config.cipher_suites.is_empty() {
        return Ok(provider);
    }
    let named = |suite: &rustls::SupportedCipherSuite| {
        let name = format!("{:?}", suite.suite());
        let iana = name.replacen("TLS13_", "TLS_", 1);
        config
            .cipher_suites
            .iter()
            .any(|wanted| *wanted == name || *wanted == iana)
    };
    provider.cipher_suites.retain(named);
    if provider.cipher_suites.is_empty() {
        return Err(format!(
            "ssl.cipher.suites ({}) names no suite rustls offers",
            config.cipher_suites.join(",")
        ));
    }
    Ok(provider)
}

/// A TLS listener as the dynamic config sees it: a change to its `ssl.*`
/// keys (or an AlterConfigs naming them again after the files changed)
/// reloads its stores; one that does not load is refused.
pub struct ListenerTls {
    /// The listener whose `ssl.*` keys apply.
    pub listener: crate::config::Listener,
    /// Its TLS in service.
    pub tls: Arc<TlsListener>,
}

impl crate::config::dynamic::Reconfigurable for ListenerTls {
    fn validate(&self, config: &crate::config::BrokerConfig) -> Result<(), String> {
        let ssl = config
            .ssl_config(&self.listener)
            .map_err(|e| e.to_string())?;
        let bytes = store_bytes(&ssl).map_err(|e| e.to_string())?;
        acceptor(&ssl, &bytes)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn reconfigure(&self, config: &crate::config::BrokerConfig) {
        let reloaded = config
            .ssl_config(&self.listener)
            .map_err(|e| e.to_string())
            .and_then(|ssl| self.tls.reload(ssl).map_err(|e| e.to_string()));
        match reloaded {
            Ok(true) => log::info!(
                "listener {}: TLS keystore and truststore reloaded; new connections use them",
                self.listener.name
            ),
            Ok(false) => {}
            Err(e) => log::error!("TLS not reloaded, the previous keystore stays in service: {e}"),
        }
    }
}

/// The TLS a broker dials another broker's listener with (its own
/// listener's `ssl.*` settings, as Kafka's inter-broker client takes
/// them): the peer's chain checked against the truststore, its name
/// against the host dialled unless `ssl.endpoint.identification.algorithm`
/// is empty, and the keystore presented when the peer asks for a client
/// certificate.
pub fn client_config(config: &SslConfig) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let settings = |why: String| TlsError::Settings {
        listener: config.listener.clone(),
        why,
    };
    let bytes = store_bytes(config)?;
    if bytes.truststore.is_empty() {
        return Err(truststore_error(
            config,
            "brokers dialling each other over TLS check the peer against ssl.truststore.location or ssl.truststore.certificates, which is unset".into(),
        ));
    }
    let provider = Arc::new(provider(config).map_err(settings)?);
    let versions = protocol_versions(config).map_err(settings)?;
    let roots = Arc::new(roots(config, &bytes.truststore)?);
    let webpki =
        rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| truststore_error(config, e.to_string()))?;
    let verifier: Arc<dyn rustls::client::danger::ServerCertVerifier> =
        if config.endpoint_identification {
            webpki
        } else {
            Arc::new(AnyHostName(webpki))
        };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| settings(format!("ssl.enabled.protocols and ssl.cipher.suites: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let client = if bytes.keystore.is_empty() {
        builder.with_no_client_auth()
    } else {
        let identity = identity(config, &bytes.keystore)?;
        builder
            .with_client_auth_cert(identity.chain, identity.key)
            .map_err(|e| {
                keystore_error(config, format!("the key does not fit its certificate: {e}"))
            })?
    };
    Ok(Arc::new(client))
}

/// A chain verifier that does not hold the certificate to the host name
/// (`ssl.endpoint.identification.algorithm=` empty, as Kafka allows).
#[derive(Debug)]
struct AnyHostName(Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for AnyHostName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &rustls_pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        use rustls::CertificateError::{NotValidForName, NotValidForNameContext};
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                NotValidForName | NotValidForNameContext { .. },
            )) => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
