//! The security keys: `authorizer.class.name` (only Kafka's ZooKeeper-era
//! `AclAuthorizer` can be named; Java classes cannot be loaded),
//! `super.users` (`User:alice;User:bob`, Kafka's semicolon-separated list),
//! `listener.security.protocol.map`, `sasl.enabled.mechanisms`, and the
//! JAAS lines (`sasl.jaas.config`,
//! `listener.name.<listener>.<mechanism>.sasl.jaas.config`), which are
//! kept apart from the table so DescribeConfigs never shows a password.

use std::collections::{BTreeMap, BTreeSet};

use super::ssl::{ClientAuth, StoreType};
use super::{invalid, BrokerConfig, ConfigError, Listener};
use crate::security::sasl::{
    parse_jaas, PlainUsers, PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, SUPPORTED_MECHANISMS,
};

/// Which authorizer the broker runs (`authorizer.class.name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthorizerClass {
    /// Kafka's default (empty): no authorizer, every request is allowed.
    #[default]
    None,
    /// `kafka.security.authorizer.AclAuthorizer`: ACLs in the metadata store.
    AclAuthorizer,
}

impl AuthorizerClass {
    /// Kafka's ZooKeeper-era authorizer class.
    pub const ACL_AUTHORIZER_CLASS: &'static str = "kafka.security.authorizer.AclAuthorizer";

    pub(super) fn parse(raw: &str) -> Result<AuthorizerClass, ConfigError> {
        match raw.trim() {
            "" => Ok(AuthorizerClass::None),
            Self::ACL_AUTHORIZER_CLASS => Ok(AuthorizerClass::AclAuthorizer),
            other => Err(ConfigError::InvalidValue {
                key: "authorizer.class.name".into(),
                value: other.into(),
                reason: format!(
                    "Java classes cannot be loaded; the built-in authorizer is {}",
                    Self::ACL_AUTHORIZER_CLASS
                ),
            }),
        }
    }

    /// The class name as the config says it ("" for none).
    pub fn class_name(self) -> &'static str {
        match self {
            AuthorizerClass::None => "",
            AuthorizerClass::AclAuthorizer => Self::ACL_AUTHORIZER_CLASS,
        }
    }
}

/// `super.users`: principals (`Type:name`) allowed everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SuperUsers(pub BTreeSet<String>);

impl SuperUsers {
    pub(super) fn parse(raw: &str) -> Result<SuperUsers, ConfigError> {
        let mut users = BTreeSet::new();
        for entry in raw.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            match entry.split_once(':') {
                Some((kind, _)) if !kind.is_empty() => {
                    users.insert(entry.to_string());
                }
                _ => {
                    return Err(ConfigError::InvalidValue {
                        key: "super.users".into(),
                        value: raw.into(),
                        reason: format!(
                            "{entry} is not a principal of the form principalType:principalName"
                        ),
                    })
                }
            }
        }
        Ok(SuperUsers(users))
    }

    /// The list as Kafka writes it, `;`-separated.
    pub fn text(&self) -> String {
        self.0.iter().cloned().collect::<Vec<_>>().join(";")
    }
}

/// `max.connections.per.ip.overrides`: `address:count,...` (IP addresses;
/// Kafka also resolves host names, which config parsing here must not).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectionOverrides(pub BTreeMap<std::net::IpAddr, usize>);

impl ConnectionOverrides {
    pub(super) fn parse(raw: &str) -> Result<ConnectionOverrides, ConfigError> {
        let invalid = |reason: String| ConfigError::InvalidValue {
            key: "max.connections.per.ip.overrides".into(),
            value: raw.into(),
            reason,
        };
        let mut overrides = BTreeMap::new();
        for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (host, count) = entry
                .rsplit_once(':')
                .ok_or_else(|| invalid(format!("{entry} is not address:count")))?;
            let ip: std::net::IpAddr = host
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .map_err(|_| invalid(format!("{host} is not an IP address")))?;
            let count: usize = count
                .trim()
                .parse()
                .map_err(|_| invalid(format!("{count} is not a connection count")))?;
            overrides.insert(ip.to_canonical(), count);
        }
        Ok(ConnectionOverrides(overrides))
    }

    /// As Kafka prints it.
    pub fn text(&self) -> String {
        self.0
            .iter()
            .map(|(ip, n)| format!("{ip}:{n}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The limit for `ip`: its override, else `default`.
    pub fn limit_for(&self, ip: std::net::IpAddr, default: usize) -> usize {
        self.0.get(&ip.to_canonical()).copied().unwrap_or(default)
    }
}

/// A listener's `security.protocol` (`SecurityProtocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecurityProtocol {
    /// No TLS, no authentication: every client is `User:ANONYMOUS`.
    #[default]
    Plaintext,
    /// TLS (not built yet: refused at start-up).
    Ssl,
    /// SASL over plain TCP.
    SaslPlaintext,
    /// SASL over TLS (not built yet: refused at start-up).
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name (`SASL_PLAINTEXT`).
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Kafka's wire id (UpdateMetadata's `security_protocol`).
    pub fn id(self) -> i16 {
        match self {
            SecurityProtocol::Plaintext => 0,
            SecurityProtocol::Ssl => 1,
            SecurityProtocol::SaslPlaintext => 2,
            SecurityProtocol::SaslSsl => 3,
        }
    }

    /// The protocol of a wire id.
    pub fn from_id(id: i16) -> Option<SecurityProtocol> {
        [
            SecurityProtocol::Plaintext,
            SecurityProtocol::Ssl,
            SecurityProtocol::SaslPlaintext,
            SecurityProtocol::SaslSsl,
        ]
        .into_iter()
        .find(|p| p.id() == id)
    }

    pub(crate) fn parse(name: &str) -> Option<SecurityProtocol> {
        [
            SecurityProtocol::Plaintext,
            SecurityProtocol::Ssl,
            SecurityProtocol::SaslPlaintext,
            SecurityProtocol::SaslSsl,
        ]
        .into_iter()
        .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Whether clients authenticate with SASL.
    pub fn is_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

/// How a broker logs in to another on a SASL inter-broker listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterBrokerLogin {
    /// PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
    pub mechanism: String,
    /// The JAAS line's `username`.
    pub user: String,
    /// Its `password`.
    pub password: super::Password,
}

/// Kafka's default `listener.security.protocol.map`.
pub const DEFAULT_PROTOCOL_MAP: &str =
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

/// Kafka's default map, parsed.
pub fn default_protocol_map() -> BTreeMap<String, SecurityProtocol> {
    parse_protocol_map(DEFAULT_PROTOCOL_MAP).unwrap_or_default()
}

/// `listener.security.protocol.map`: `NAME:PROTOCOL,...`, names upper-cased.
pub fn parse_protocol_map(raw: &str) -> Result<BTreeMap<String, SecurityProtocol>, ConfigError> {
    let invalid = |reason: String| ConfigError::InvalidValue {
        key: "listener.security.protocol.map".into(),
        value: raw.into(),
        reason,
    };
    let mut map = BTreeMap::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, protocol) = entry
            .split_once(':')
            .ok_or_else(|| invalid(format!("{entry} is not NAME:PROTOCOL")))?;
        let protocol = SecurityProtocol::parse(protocol)
            .ok_or_else(|| invalid(format!("{protocol} is not a security protocol")))?;
        if map
            .insert(name.trim().to_ascii_uppercase(), protocol)
            .is_some()
        {
            return Err(invalid(format!("listener {name} is mapped twice")));
        }
    }
    Ok(map)
}

/// `sasl.enabled.mechanisms`, in order (Kafka's default: GSSAPI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslMechanisms(pub Vec<String>);

impl Default for SaslMechanisms {
    fn default() -> Self {
        SaslMechanisms(vec!["GSSAPI".to_string()])
    }
}

impl SaslMechanisms {
    pub(super) fn parse(raw: &str) -> SaslMechanisms {
        SaslMechanisms(
            raw.split(',')
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(str::to_string)
                .collect(),
        )
    }

    /// The list as Kafka writes it.
    pub fn text(&self) -> String {
        self.0.join(",")
    }
}

/// Whether `key` is a JAAS line: `sasl.jaas.config` or
/// `listener.name.<listener>.<mechanism>.sasl.jaas.config`.
pub fn is_jaas_key(key: &str) -> bool {
    key == "sasl.jaas.config"
        || key
            .strip_prefix("listener.name.")
            .and_then(|rest| rest.strip_suffix(".sasl.jaas.config"))
            .is_some_and(|middle| middle.split('.').count() == 2)
}

/// The key of one listener's JAAS line for one mechanism (Kafka lower-cases
/// both: `listener.name.sasl_plaintext.plain.sasl.jaas.config`).
pub fn jaas_key(listener: &str, mechanism: &str) -> String {
    format!(
        "listener.name.{}.{}.sasl.jaas.config",
        listener.to_ascii_lowercase(),
        mechanism.to_ascii_lowercase()
    )
}

impl BrokerConfig {
    /// The users PLAIN accepts on `listener`: its
    /// `listener.name.<l>.plain.sasl.jaas.config`, else `sasl.jaas.config`.
    pub fn plain_users(&self, listener: &Listener) -> Result<PlainUsers, ConfigError> {
        let own = jaas_key(&listener.name, "PLAIN");
        let (key, text) = match self.sasl_jaas_configs.get(&own) {
            Some(text) => (own, text),
            None => match self.sasl_jaas_configs.get("sasl.jaas.config") {
                Some(text) => ("sasl.jaas.config".to_string(), text),
                None => {
                    return Err(invalid(
                        &own,
                        "",
                        format!(
                            "SASL/PLAIN on listener {} needs a JAAS line with user_<name>=\"<password>\" \
                             ({own}, or sasl.jaas.config)",
                            listener.name
                        ),
                    ))
                }
            },
        };
        // The value is never echoed: it holds passwords.
        let entry = parse_jaas(text).map_err(|_| {
            invalid(
                &key,
                "(hidden)",
                "not a JAAS configuration entry ending with ';'",
            )
        })?;
        if entry.login_module != PLAIN_LOGIN_MODULE {
            return Err(invalid(
                &key,
                "(hidden)",
                format!(
                    "PLAIN needs {PLAIN_LOGIN_MODULE}, not {}",
                    entry.login_module
                ),
            ));
        }
        Ok(PlainUsers::from_jaas(&entry))
    }

    /// What ferrolog cannot serve is refused at start-up: SASL mechanisms
    /// it does not run, a SASL listener without users, a TLS listener
    /// whose keystore cannot be described (the files themselves are read
    /// by `security::tls`), and SASL or TLS between brokers (the
    /// inter-broker listener must be PLAINTEXT in a cluster).
    pub(super) fn validate_listener_security(&self) -> Result<(), ConfigError> {
        for listener in &self.listeners {
            let protocol = listener.security_protocol;
            if matches!(protocol, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl) {
                self.validate_ssl(listener)?;
            }
            if protocol.is_sasl() {
                if let Some(unsupported) = self
                    .sasl_enabled_mechanisms
                    .0
                    .iter()
                    .find(|m| !SUPPORTED_MECHANISMS.contains(&m.as_str()))
                {
                    return Err(invalid(
                        "sasl.enabled.mechanisms",
                        &self.sasl_enabled_mechanisms.text(),
                        format!(
                            "SASL mechanism {unsupported} is not supported; ferrolog runs {}",
                            SUPPORTED_MECHANISMS.join(", ")
                        ),
                    ));
                }
                if self.sasl_enabled_mechanisms.0.is_empty() {
                    return Err(invalid(
                        "sasl.enabled.mechanisms",
                        "",
                        format!(
                            "listener {} is SASL but no mechanism is enabled",
                            listener.name
                        ),
                    ));
                }
                let plain = self.sasl_enabled_mechanisms.0.iter().any(|m| m == "PLAIN");
                if plain && self.plain_users(listener)?.is_empty() {
                    return Err(invalid(
                        &jaas_key(&listener.name, "PLAIN"),
                        "(hidden)",
                        "the JAAS line names no user_<name>",
                    ));
                }
            }
        }
        // Kafka's rule: 0 per address only makes sense with exceptions.
        if self.max_connections_per_ip == 0 && self.max_connections_per_ip_overrides.0.is_empty() {
            return Err(invalid(
                "max.connections.per.ip",
                "0",
                "0 refuses every client unless max.connections.per.ip.overrides names some",
            ));
        }
        // Brokers reach each other on the inter-broker listener (Kafka's
        // rule: it must be one this broker advertises), logging in on it
        // with `sasl.mechanism.inter.broker.protocol` when it is SASL.
        if self.zookeeper_connect.is_some() {
            let name = self.inter_broker_listener_name();
            let Some(listener) = self.inter_broker_listener() else {
                return Err(invalid(
                    "inter.broker.listener.name",
                    &name,
                    "inter.broker.listener.name must be a listener name defined in advertised.listeners",
                ));
            };
            if listener.security_protocol.is_sasl() {
                self.inter_broker_login()?;
            }
        }
        Ok(())
    }

    /// The login a broker uses on the SASL inter-broker listener: the
    /// mechanism (`sasl.mechanism.inter.broker.protocol`, one the listener
    /// enables) and the `username`/`password` of the listener's JAAS line
    /// for it (`listener.name.<l>.<mechanism>.sasl.jaas.config`, else
    /// `sasl.jaas.config`), as Kafka's inter-broker client takes them.
    pub fn inter_broker_login(&self) -> Result<InterBrokerLogin, ConfigError> {
        let key = "sasl.mechanism.inter.broker.protocol";
        let mechanism = self.sasl_mechanism_inter_broker_protocol.clone();
        let listener = self.inter_broker_listener_name();
        if !SUPPORTED_MECHANISMS.contains(&mechanism.as_str())
            || !self.sasl_enabled_mechanisms.0.contains(&mechanism)
        {
            return Err(invalid(
                key,
                &mechanism,
                format!(
                    "brokers log in to listener {listener} with one of its enabled mechanisms ({}) that ferrolog runs ({})",
                    self.sasl_enabled_mechanisms.text(),
                    SUPPORTED_MECHANISMS.join(", ")
                ),
            ));
        }
        let own = jaas_key(&listener, &mechanism);
        let (source, text) = match self.sasl_jaas_configs.get(&own) {
            Some(text) => (own, text),
            None => match self.sasl_jaas_configs.get("sasl.jaas.config") {
                Some(text) => ("sasl.jaas.config".to_string(), text),
                None => {
                    return Err(invalid(
                        &own,
                        "",
                        format!("brokers log in with {mechanism} on listener {listener}: its JAAS line needs username and password"),
                    ))
                }
            },
        };
        let entry = parse_jaas(text).map_err(|_| {
            invalid(
                &source,
                "(hidden)",
                "not a JAAS configuration entry ending with ';'",
            )
        })?;
        let module = if mechanism == "PLAIN" {
            PLAIN_LOGIN_MODULE
        } else {
            SCRAM_LOGIN_MODULE
        };
        match (
            entry.login_module == module,
            entry.options.get("username"),
            entry.options.get("password"),
        ) {
            (true, Some(user), Some(password)) => Ok(InterBrokerLogin {
                mechanism,
                user: user.clone(),
                password: super::Password(password.clone()),
            }),
            _ => Err(invalid(
                &source,
                "(hidden)",
                format!("brokers log in with {module} required username=\"...\" password=\"...\";"),
            )),
        }
    }

    /// Kafka's rules for a TLS listener's stores (`DefaultSslEngineFactory`):
    /// PEM keys come from one file or from the two inline keys, never
    /// both; PKCS12 needs its file and password; JKS cannot be read.
    fn validate_ssl(&self, listener: &Listener) -> Result<(), ConfigError> {
        let ssl = self.ssl_config(listener)?;
        let key = |name: &str| {
            format!(
                "listener.name.{}.{name}",
                listener.name.to_ascii_lowercase()
            )
        };
        let jks = |name: &str| {
            invalid(
                name,
                "JKS",
                format!(
                    "listener {} needs a PEM or PKCS12 store: JKS is Java's own format \
                     (convert it with keytool -importkeystore -deststoretype PKCS12)",
                    listener.name
                ),
            )
        };
        match ssl.keystore_type {
            StoreType::Jks => return Err(jks("ssl.keystore.type")),
            StoreType::Pem => {
                let inline = ssl.keystore_key.is_some() || ssl.keystore_certificate_chain.is_some();
                match (&ssl.keystore_location, inline) {
                    (Some(_), true) => {
                        return Err(invalid(
                            &key("ssl.keystore.location"),
                            "(set)",
                            "a PEM keystore is ssl.keystore.location or ssl.keystore.key with ssl.keystore.certificate.chain, not both",
                        ))
                    }
                    (None, false) => {
                        return Err(invalid(
                            &key("ssl.keystore.location"),
                            "",
                            format!("{} listener {} has no keystore", listener.security_protocol.name(), listener.name),
                        ))
                    }
                    (None, true)
                        if ssl.keystore_key.is_none() || ssl.keystore_certificate_chain.is_none() =>
                    {
                        return Err(invalid(
                            &key("ssl.keystore.key"),
                            "(hidden)",
                            "an inline PEM keystore needs both ssl.keystore.key and ssl.keystore.certificate.chain",
                        ))
                    }
                    _ => {}
                }
                if ssl.keystore_password.is_some() {
                    return Err(invalid(
                        &key("ssl.keystore.password"),
                        "(hidden)",
                        "SSL key store password cannot be specified with PEM format, only key password may be specified",
                    ));
                }
            }
            StoreType::Pkcs12 => {
                if ssl.keystore_location.is_none() {
                    return Err(invalid(
                        &key("ssl.keystore.location"),
                        "",
                        format!(
                            "{} listener {} has no keystore",
                            listener.security_protocol.name(),
                            listener.name
                        ),
                    ));
                }
                if ssl.keystore_password.is_none() {
                    return Err(invalid(
                        &key("ssl.keystore.password"),
                        "",
                        "a PKCS12 keystore needs ssl.keystore.password",
                    ));
                }
            }
        }
        let has_truststore =
            ssl.truststore_location.is_some() || ssl.truststore_certificates.is_some();
        match ssl.truststore_type {
            StoreType::Jks if has_truststore => return Err(jks("ssl.truststore.type")),
            StoreType::Pem if ssl.truststore_password.is_some() => {
                return Err(invalid(
                    &key("ssl.truststore.password"),
                    "(hidden)",
                    "SSL trust store password cannot be specified for PEM format.",
                ))
            }
            StoreType::Pkcs12 if has_truststore && ssl.truststore_password.is_none() => {
                return Err(invalid(
                    &key("ssl.truststore.password"),
                    "",
                    "a PKCS12 truststore needs ssl.truststore.password",
                ))
            }
            _ => {}
        }
        if ssl.client_auth != ClientAuth::None && !has_truststore {
            return Err(invalid(
                &key("ssl.client.auth"),
                &format!("{:?}", ssl.client_auth).to_ascii_lowercase(),
                "checking client certificates needs a truststore (ssl.truststore.location or ssl.truststore.certificates)",
            ));
        }
        crate::security::principal::PrincipalMapper::parse(&ssl.principal_mapping_rules).map_err(
            |why| {
                invalid(
                    &key("ssl.principal.mapping.rules"),
                    &ssl.principal_mapping_rules,
                    why,
                )
            },
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_as_kafka_reads_them() {
        assert_eq!(AuthorizerClass::parse("").ok(), Some(AuthorizerClass::None));
        assert_eq!(
            AuthorizerClass::parse("kafka.security.authorizer.AclAuthorizer").ok(),
            Some(AuthorizerClass::AclAuthorizer)
        );
        assert!(
            AuthorizerClass::parse("org.apache.kafka.metadata.authorizer.StandardAuthorizer")
                .is_err()
        );
        let users = SuperUsers::parse("User:admin; User:broker;").expect("parses");
        assert_eq!(users.text(), "User:admin;User:broker");
        assert!(SuperUsers::parse("admin").is_err());
    }

    #[test]
    fn connection_overrides_parse_as_kafka_writes_them() {
        let parsed = ConnectionOverrides::parse("127.0.0.1:5, [::1]:2").expect("parses");
        assert_eq!(parsed.limit_for("127.0.0.1".parse().expect("ip"), 100), 5);
        assert_eq!(parsed.limit_for("::1".parse().expect("ip"), 100), 2);
        assert_eq!(parsed.limit_for("10.0.0.1".parse().expect("ip"), 100), 100);
        assert_eq!(parsed.text(), "127.0.0.1:5,::1:2");
        assert!(ConnectionOverrides::parse("127.0.0.1").is_err());
        assert!(ConnectionOverrides::parse("127.0.0.1:many").is_err());
        assert!(ConnectionOverrides::parse("localhost:3").is_err());
    }

    #[test]
    fn protocol_maps_and_jaas_keys_are_kafkas() {
        let map = parse_protocol_map(DEFAULT_PROTOCOL_MAP).expect("parses");
        assert_eq!(map["SASL_PLAINTEXT"], SecurityProtocol::SaslPlaintext);
        let custom =
            parse_protocol_map("internal:PLAINTEXT, external:sasl_plaintext").expect("parses");
        assert_eq!(custom["EXTERNAL"], SecurityProtocol::SaslPlaintext);
        assert!(parse_protocol_map("A:TLS").is_err());
        assert!(parse_protocol_map("A:PLAINTEXT,a:SSL").is_err());
        assert!(is_jaas_key("sasl.jaas.config"));
        assert!(is_jaas_key(
            "listener.name.sasl_plaintext.plain.sasl.jaas.config"
        ));
        assert!(!is_jaas_key("listener.name.plain.sasl.jaas.config"));
        assert_eq!(
            jaas_key("SASL_PLAINTEXT", "PLAIN"),
            "listener.name.sasl_plaintext.plain.sasl.jaas.config"
        );
        assert_eq!(
            SaslMechanisms::parse("PLAIN, SCRAM-SHA-512").text(),
            "PLAIN,SCRAM-SHA-512"
        );
    }

    #[test]
    fn sasl_listeners_need_plain_users_and_brokers_log_in_with_a_jaas_user() {
        let jaas = r#"listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";"#;
        let parse = |text: &str| BrokerConfig::from_properties(text, &[]);
        let (config, warnings) = parse(&format!(
            "listeners=SASL_PLAINTEXT://127.0.0.1:9093\nsasl.enabled.mechanisms=PLAIN\n{jaas}\n"
        ))
        .expect("a SASL/PLAIN listener");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            config.listeners[0].security_protocol,
            SecurityProtocol::SaslPlaintext
        );
        assert_eq!(
            config
                .plain_users(&config.listeners[0])
                .expect("users")
                .len(),
            1
        );
        // The JAAS line is not a table key: DescribeConfigs never lists it.
        assert!(super::super::broker_key("sasl.jaas.config").is_none());
        assert!(config
            .value_of("listener.name.sasl_plaintext.plain.sasl.jaas.config")
            .is_none());
        let refused = |text: String, needle: &str| match parse(&text) {
            Err(e) => assert!(e.to_string().contains(needle), "{e} lacks {needle}"),
            Ok(_) => panic!("accepted: {text}"),
        };
        // Kafka's default mechanism is GSSAPI, which ferrolog cannot run.
        refused(
            format!("listeners=SASL_PLAINTEXT://127.0.0.1:9093\n{jaas}\n"),
            "GSSAPI",
        );
        refused(
            "listeners=SASL_PLAINTEXT://127.0.0.1:9093\nsasl.enabled.mechanisms=PLAIN\n".into(),
            "JAAS",
        );
        // In a cluster the inter-broker listener (PLAINTEXT unless named)
        // must exist; on a SASL one brokers log in with
        // sasl.mechanism.inter.broker.protocol as the JAAS line's user.
        let zk = "zookeeper.connect=127.0.0.1:2181";
        refused(
            format!("listeners=SASL_PLAINTEXT://127.0.0.1:9093\nsasl.enabled.mechanisms=PLAIN\n{jaas}\n{zk}\n"),
            "inter.broker.listener.name must be a listener name defined in advertised.listeners",
        );
        let both = format!("listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093\nsasl.enabled.mechanisms=PLAIN\n{jaas}\n{zk}\n");
        let (config, _) = parse(&both).expect("SASL for clients, PLAINTEXT between brokers");
        assert_eq!(config.inter_broker_listener().map(|l| l.port), Some(9092));
        refused(
            format!("{both}inter.broker.listener.name=SASL_PLAINTEXT\n"),
            "sasl.mechanism.inter.broker.protocol",
        );
        refused(
            format!("{both}inter.broker.listener.name=SASL_PLAINTEXT\nsasl.mechanism.inter.broker.protocol=PLAIN\n"),
            "username",
        );
        let login = r#"listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret";"#;
        let (config, _) = parse(&format!(
            "listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093\nsasl.enabled.mechanisms=PLAIN\n{login}\n{zk}\n\
             inter.broker.listener.name=SASL_PLAINTEXT\nsasl.mechanism.inter.broker.protocol=PLAIN\n"
        ))
        .expect("brokers log in as broker");
        let login = config.inter_broker_login().expect("login");
        assert_eq!(
            (login.mechanism.as_str(), login.user.as_str()),
            ("PLAIN", "broker")
        );
        assert_eq!(login.password.0, "broker-secret");
        refused(
            format!("{both}inter.broker.listener.name=PLAINTEXT\nsecurity.inter.broker.protocol=PLAINTEXT\n"),
            "Only one of",
        );
        refused(
            "listeners=EXTERNAL://127.0.0.1:9093\n".into(),
            "listener.security.protocol.map",
        );
        let custom = "listeners=EXTERNAL://127.0.0.1:9093\nlistener.security.protocol.map=EXTERNAL:SASL_PLAINTEXT\nsasl.enabled.mechanisms=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_bob=\"b\";\n";
        let (config, _) =
            parse(custom).expect("a named SASL listener with the broker-wide JAAS line");
        assert_eq!(
            config.listeners[0].security_protocol,
            SecurityProtocol::SaslPlaintext
        );
        assert_eq!(
            config
                .plain_users(&config.listeners[0])
                .expect("users")
                .len(),
            1
        );
    }
}
