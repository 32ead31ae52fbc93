//! The TLS keys (`ssl.*`), each declared once in [`SSL_KEYS`] with Kafka's
//! default, and resolved per listener as Kafka resolves them: a
//! `listener.name.<listener>.ssl.<key>` line wins over `ssl.<key>` for
//! that listener, key by key. The values are kept apart from the broker
//! table (as the JAAS lines are): several are passwords, which
//! DescribeConfigs must never show. Nothing here reads a keystore; that
//! is `security::tls`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{invalid, BrokerConfig, ConfigError, Listener};

/// One `ssl.*` key: Kafka's name, default, and whether it is a password.
#[derive(Debug, Clone, Copy)]
pub struct SslKeyDef {
    /// Kafka's name.
    pub name: &'static str,
    /// Kafka's default; `None` is Kafka's null.
    pub default: Option<&'static str>,
    /// `Some(why)`: accepted, but it changes nothing.
    pub ignored: Option<&'static str>,
}

const fn key(name: &'static str, default: Option<&'static str>) -> SslKeyDef {
    SslKeyDef {
        name,
        default,
        ignored: None,
    }
}

/// Kafka's PASSWORD type: held as [`Password`], never logged.
const fn password(name: &'static str) -> SslKeyDef {
    key(name, None)
}

const fn java_only(name: &'static str, default: Option<&'static str>) -> SslKeyDef {
    SslKeyDef {
        name,
        default,
        ignored: Some("it names a Java provider or algorithm; rustls has its own"),
    }
}

/// Every `ssl.*` key a broker reads, sorted by name.
pub const SSL_KEYS: &[SslKeyDef] = &[
    key("ssl.cipher.suites", Some("")),
    key("ssl.client.auth", Some("none")),
    key("ssl.enabled.protocols", Some("TLSv1.2,TLSv1.3")),
    key("ssl.endpoint.identification.algorithm", Some("https")),
    java_only("ssl.engine.factory.class", None),
    password("ssl.key.password"),
    java_only("ssl.keymanager.algorithm", Some("SunX509")),
    password("ssl.keystore.certificate.chain"),
    password("ssl.keystore.key"),
    key("ssl.keystore.location", None),
    password("ssl.keystore.password"),
    key("ssl.keystore.type", Some("JKS")),
    key("ssl.principal.mapping.rules", Some("DEFAULT")),
    key("ssl.protocol", Some("TLSv1.3")),
    java_only("ssl.provider", None),
    java_only("ssl.secure.random.implementation", None),
    java_only("ssl.trustmanager.algorithm", Some("PKIX")),
    password("ssl.truststore.certificates"),
    key("ssl.truststore.location", None),
    password("ssl.truststore.password"),
    key("ssl.truststore.type", Some("JKS")),
];

/// The declared `ssl.*` key named `name`.
pub fn ssl_key(name: &str) -> Option<&'static SslKeyDef> {
    SSL_KEYS
        .binary_search_by(|def| def.name.cmp(name))
        .ok()
        .map(|i| &SSL_KEYS[i])
}

/// Whether `key` is an `ssl.*` key or a listener's override of one
/// (`listener.name.ssl.ssl.keystore.location`).
pub fn is_ssl_key(key: &str) -> bool {
    ssl_key(key).is_some() || listener_override(key).is_some()
}

/// `(listener, ssl key)` of a `listener.name.<listener>.ssl.<key>` line.
fn listener_override(key: &str) -> Option<(&str, &'static SslKeyDef)> {
    let rest = key.strip_prefix("listener.name.")?;
    let (listener, ssl) = rest.split_once('.')?;
    Some((listener, ssl_key(ssl)?))
}

/// A keystore's or truststore's format (`ssl.keystore.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreType {
    /// Key and certificates as PEM text.
    Pem,
    /// A PKCS#12 file (keytool's default since Java 9, `openssl pkcs12`).
    Pkcs12,
    /// Java's own format: it cannot be read here (convert it to PKCS12).
    Jks,
}

impl StoreType {
    fn parse(key: &str, raw: &str) -> Result<StoreType, ConfigError> {
        match raw.trim().to_ascii_uppercase().as_str() {
            "PEM" => Ok(StoreType::Pem),
            "PKCS12" => Ok(StoreType::Pkcs12),
            "JKS" => Ok(StoreType::Jks),
            _ => Err(invalid(key, raw, "the store types are PEM, PKCS12 and JKS")),
        }
    }
}

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate is asked for.
    None,
    /// Asked for; a client without one connects as `User:ANONYMOUS`.
    Requested,
    /// A client without a trusted certificate cannot connect.
    Required,
}

/// A password's text, hidden from `Debug` (and so from logs).
#[derive(Clone, PartialEq, Eq)]
pub struct Password(pub String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[hidden]")
    }
}

/// One listener's TLS settings, its overrides applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SslConfig {
    /// The listener these are for (upper-cased).
    pub listener: String,
    /// `ssl.keystore.type`.
    pub keystore_type: StoreType,
    /// `ssl.keystore.location`.
    pub keystore_location: Option<PathBuf>,
    /// `ssl.keystore.password` (PKCS12).
    pub keystore_password: Option<Password>,
    /// `ssl.key.password`: an encrypted key's (PEM), the key entry's (PKCS12).
    pub key_password: Option<Password>,
    /// `ssl.keystore.key`: a PEM key inline.
    pub keystore_key: Option<Password>,
    /// `ssl.keystore.certificate.chain`: PEM certificates inline.
    pub keystore_certificate_chain: Option<Password>,
    /// `ssl.truststore.type`.
    pub truststore_type: StoreType,
    /// `ssl.truststore.location`.
    pub truststore_location: Option<PathBuf>,
    /// `ssl.truststore.password` (PKCS12).
    pub truststore_password: Option<Password>,
    /// `ssl.truststore.certificates`: PEM certificates inline.
    pub truststore_certificates: Option<Password>,
    /// `ssl.client.auth`.
    pub client_auth: ClientAuth,
    /// `ssl.principal.mapping.rules`, as written.
    pub principal_mapping_rules: String,
    /// `ssl.enabled.protocols` (`TLSv1.2`, `TLSv1.3`).
    pub enabled_protocols: Vec<String>,
    /// `ssl.cipher.suites`; empty keeps every suite rustls offers.
    pub cipher_suites: Vec<String>,
    /// `ssl.endpoint.identification.algorithm`: `https` (the default)
    /// checks a broker's certificate names the host dialled; empty does not.
    pub endpoint_identification: bool,
}

fn list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl BrokerConfig {
    /// The raw value of `ssl.<key>` for `listener`: its
    /// `listener.name.<l>.` line, else the broker-wide one, else Kafka's
    /// default. Empty text counts as unset, as Kafka's null.
    fn ssl_value(&self, listener: &str, def: &SslKeyDef) -> (String, Option<String>) {
        let own = format!(
            "listener.name.{}.{}",
            listener.to_ascii_lowercase(),
            def.name
        );
        for key in [own, def.name.to_string()] {
            if let Some(value) = self.ssl_configs.get(&key) {
                return (key, Some(value.clone()).filter(|v| !v.trim().is_empty()));
            }
        }
        (
            def.name.to_string(),
            def.default.map(str::to_string).filter(|v| !v.is_empty()),
        )
    }

    /// `listener`'s TLS settings.
    pub fn ssl_config(&self, listener: &Listener) -> Result<SslConfig, ConfigError> {
        let name = listener.name.as_str();
        let value = |key: &str| -> (String, Option<String>) {
            match ssl_key(key) {
                Some(def) => self.ssl_value(name, def),
                None => (key.to_string(), None),
            }
        };
        let text = |key: &str| value(key).1;
        let secret = |key: &str| text(key).map(Password);
        let store = |key: &str| -> Result<StoreType, ConfigError> {
            let (source, raw) = value(key);
            StoreType::parse(&source, raw.as_deref().unwrap_or("JKS"))
        };
        let client_auth = {
            let (source, raw) = value("ssl.client.auth");
            match raw
                .as_deref()
                .unwrap_or("none")
                .trim()
                .to_ascii_lowercase()
                .as_str()
            {
                "none" => ClientAuth::None,
                "requested" => ClientAuth::Requested,
                "required" => ClientAuth::Required,
                other => {
                    return Err(invalid(
                        &source,
                        other,
                        "ssl.client.auth is none, requested or required",
                    ))
                }
            }
        };
        Ok(SslConfig {
            listener: listener.name.clone(),
            keystore_type: store("ssl.keystore.type")?,
            keystore_location: text("ssl.keystore.location").map(PathBuf::from),
            keystore_password: secret("ssl.keystore.password"),
            key_password: secret("ssl.key.password"),
            keystore_key: secret("ssl.keystore.key"),
            keystore_certificate_chain: secret("ssl.keystore.certificate.chain"),
            truststore_type: store("ssl.truststore.type")?,
            truststore_location: text("ssl.truststore.location").map(PathBuf::from),
            truststore_password: secret("ssl.truststore.password"),
            truststore_certificates: secret("ssl.truststore.certificates"),
            client_auth,
            principal_mapping_rules: text("ssl.principal.mapping.rules")
                .unwrap_or_else(|| "DEFAULT".to_string()),
            enabled_protocols: list(&text("ssl.enabled.protocols").unwrap_or_default()),
            cipher_suites: list(&text("ssl.cipher.suites").unwrap_or_default()),
            endpoint_identification: text("ssl.endpoint.identification.algorithm")
                .is_some_and(|a| a.eq_ignore_ascii_case("https")),
        })
    }

    /// The `ssl.*` lines set that change nothing here, to warn about.
    pub fn ignored_ssl_keys(&self) -> Vec<(&str, &'static str)> {
        self.ssl_configs
            .keys()
            .filter_map(|key| {
                let def = ssl_key(key).or_else(|| listener_override(key).map(|(_, def)| def))?;
                Some((key.as_str(), def.ignored?))
            })
            .collect()
    }
}

/// The `ssl.*` lines of a config, by key.
pub(super) fn ssl_lines<'a>(
    values: impl Iterator<Item = (&'a String, &'a String)>,
) -> BTreeMap<String, String> {
    values
        .filter(|(key, _)| is_ssl_key(key))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_table_is_sorted() {
        assert!(SSL_KEYS.windows(2).all(|w| w[0].name < w[1].name));
        assert!(is_ssl_key("ssl.keystore.location"));
        assert!(is_ssl_key("listener.name.ssl.ssl.keystore.location"));
        assert!(!is_ssl_key("listener.name.ssl.keystore.location"));
        assert!(!is_ssl_key("ssl.nonsense"));
    }

    /// A listener's own line wins, key by key, over the broker-wide one.
    #[test]
    fn listener_lines_override_broker_lines_key_by_key() {
        let (config, _) = BrokerConfig::from_properties(
            "listeners=PLAINTEXT://:9092,SSL://:9093,INTERNAL://:9094\n\
             listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SSL\n\
             ssl.keystore.type=PEM\n\
             ssl.keystore.location=/broker.pem\n\
             ssl.client.auth=required\n\
             ssl.truststore.type=PEM\n\
             ssl.truststore.location=/ca.pem\n\
             listener.name.internal.ssl.keystore.location=/internal.pem\n\
             listener.name.internal.ssl.key.password=secret\n",
            &[],
        )
        .expect("parses");
        let of = |name: &str| {
            let listener = config
                .listeners
                .iter()
                .find(|l| l.name == name)
                .expect("listener");
            config.ssl_config(listener).expect("ssl config")
        };
        let ssl = of("SSL");
        assert_eq!(ssl.keystore_location, Some(PathBuf::from("/broker.pem")));
        assert_eq!(ssl.keystore_type, StoreType::Pem);
        assert_eq!(ssl.client_auth, ClientAuth::Required);
        assert_eq!(ssl.key_password, None);
        assert_eq!(ssl.enabled_protocols, ["TLSv1.2", "TLSv1.3"]);
        let internal = of("INTERNAL");
        assert_eq!(
            internal.keystore_location,
            Some(PathBuf::from("/internal.pem"))
        );
        assert_eq!(internal.keystore_type, StoreType::Pem);
        assert_eq!(internal.key_password, Some(Password("secret".into())));
        assert_eq!(format!("{:?}", internal.key_password), "Some([hidden])");
    }
}
