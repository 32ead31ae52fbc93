//! SASL on the broker side, as pure code: the JAAS line Kafka configures a
//! mechanism with (`org.apache.kafka.common.security.plain.PlainLoginModule
//! required user_alice="alice-secret";`), the PLAIN mechanism (RFC 4616)
//! with Kafka's `PlainServerCallbackHandler` rule (users are the
//! `user_<name>` options), and the per-connection exchange
//! [`SaslExchange`]: SaslHandshake, then SaslAuthenticate until the
//! mechanism is done, PLAIN in one round, SCRAM (`security::scram`) in two.
//! The connection actor feeds it frames and looks SCRAM credentials up; it
//! does no I/O.

use std::collections::BTreeMap;

use super::scram::{ScramCredential, ScramError, ScramMechanism, ScramServer};
use super::KafkaPrincipal;

/// The mechanisms ferrolog's broker can run.
pub const SUPPORTED_MECHANISMS: &[&str] = &["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

/// Why a JAAS line cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JaasError {
    /// Not `<LoginModule> <flag> key="value"... ;`.
    #[error("not a JAAS configuration entry: {0}")]
    Syntax(String),
}

/// One JAAS configuration entry: the login module and its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JaasEntry {
    /// The login module's class name.
    pub login_module: String,
    /// `key="value"` options, in order of their names.
    pub options: BTreeMap<String, String>,
}

/// Parses one `sasl.jaas.config` value, as Kafka's `JaasConfig` does:
/// `<class> <required|requisite|sufficient|optional> (key=value)* ;`,
/// values quoted (with `\"` escapes) or bare.
pub fn parse_jaas(text: &str) -> Result<JaasEntry, JaasError> {
    let syntax = || JaasError::Syntax(text.trim().to_string());
    let body = text.trim();
    let body = body.strip_suffix(';').ok_or_else(syntax)?.trim();
    let mut chars = body.char_indices().peekable();
    let login_module = word(&mut chars);
    let flag = word(&mut chars);
    if login_module.is_empty()
        || !matches!(
            flag.to_ascii_lowercase().as_str(),
            "required" | "requisite" | "sufficient" | "optional"
        )
    {
        return Err(syntax());
    }
    let mut options = BTreeMap::new();
    loop {
        let key = word(&mut chars);
        if key.is_empty() {
            break;
        }
        if chars.next().map(|(_, c)| c) != Some('=') {
            return Err(syntax());
        }
        let value = match chars.peek() {
            Some(&(_, '"')) => {
                chars.next();
                let mut value = String::new();
                loop {
                    match chars.next() {
                        Some((_, '\\')) => match chars.next() {
                            Some((_, c)) => value.push(c),
                            None => return Err(syntax()),
                        },
                        Some((_, '"')) => break,
                        Some((_, c)) => value.push(c),
                        None => return Err(syntax()),
                    }
                }
                value
            }
            _ => word(&mut chars),
        };
        options.insert(key, value);
    }
    Ok(JaasEntry {
        login_module,
        options,
    })
}

type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

/// The next bare word: up to whitespace or `=`, leading whitespace skipped.
fn word(chars: &mut Chars<'_>) -> String {
    while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
        chars.next();
    }
    let mut out = String::new();
    while let Some(&(_, c)) = chars.peek() {
        if c.is_whitespace() || c == '=' {
            break;
        }
        out.push(c);
        chars.next();
    }
    out
}

/// Kafka's PLAIN login module class.
pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
/// Kafka's SCRAM login module (a client's username and password).
pub const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// The users PLAIN accepts: the JAAS entry's `user_<name>="<password>"`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PlainUsers(BTreeMap<String, String>);

impl std::fmt::Debug for PlainUsers {
    // Passwords stay out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

impl PlainUsers {
    /// The `user_` options of a PlainLoginModule entry.
    pub fn from_jaas(entry: &JaasEntry) -> PlainUsers {
        PlainUsers(
            entry
                .options
                .iter()
                .filter_map(|(k, v)| Some((k.strip_prefix("user_")?.to_string(), v.clone())))
                .collect(),
        )
    }

    /// How many users there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No users at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// RFC 4616's message, `[authzid] NUL authcid NUL passwd`: the
    /// authenticated user, checked in constant time; an authorization id
    /// other than the user is refused, as Kafka does.
    pub fn authenticate(&self, token: &[u8]) -> Result<String, SaslFailure> {
        let mut parts = token.split(|b| *b == 0);
        let (Some(authzid), Some(user), Some(password), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(SaslFailure::Malformed);
        };
        let (Ok(authzid), Ok(user), Ok(password)) = (
            std::str::from_utf8(authzid),
            std::str::from_utf8(user),
            std::str::from_utf8(password),
        ) else {
            return Err(SaslFailure::Malformed);
        };
        if user.is_empty() || password.is_empty() {
            return Err(SaslFailure::Malformed);
        }
        if !authzid.is_empty() && authzid != user {
            return Err(SaslFailure::AuthorizationId);
        }
        // Compare against something even for an unknown user, so the
        // time taken does not tell which users exist.
        let expected = self.0.get(user);
        let matches = constant_time_eq(
            expected.map_or(&[][..], |p| p.as_bytes()),
            password.as_bytes(),
        );
        if expected.is_some() && matches {
            Ok(user.to_string())
        } else {
            Err(SaslFailure::BadCredentials)
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() ^ b.len()) as u8 | u8::from(a.len() != b.len());
    for (i, byte) in b.iter().enumerate() {
        diff |= a.get(i).copied().unwrap_or(0) ^ byte;
    }
    diff == 0
}

/// Why an authentication failed; Kafka's message for each.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslFailure {
    /// The token is not PLAIN's three NUL-separated fields.
    #[error("Invalid SASL/PLAIN response: expected 3 tokens")]
    Malformed,
    /// `authzid` names someone else.
    #[error("Authentication failed: Client requested an authorization id that is different from username")]
    AuthorizationId,
    /// Unknown user or wrong password (not told apart, as in Kafka).
    #[error("Authentication failed: Invalid username or password")]
    BadCredentials,
    /// A SCRAM exchange failed.
    #[error(transparent)]
    Scram(#[from] ScramError),
}

/// What a connection on a SASL listener has done so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaslExchange {
    /// Nothing yet: only ApiVersions and SaslHandshake are taken.
    AwaitingHandshake,
    /// Handshake done for this mechanism; SaslAuthenticate is next.
    Authenticating {
        /// The mechanism the client chose.
        mechanism: String,
    },
    /// SCRAM's server-first sent; the client-final message is next.
    ScramFinal(Box<ScramServer>),
    /// Done: every request runs as this principal.
    Authenticated(KafkaPrincipal),
}

/// What the connection does with a request on a SASL listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaslStep {
    /// Answer the handshake: error code 0, or UNSUPPORTED_SASL_MECHANISM
    /// (33, then close); the enabled mechanisms go in the answer.
    Handshake {
        /// 0 or 33.
        error_code: i16,
    },
    /// Answer the authenticate request: 0 with the principal taken, or
    /// SASL_AUTHENTICATION_FAILED (58) with Kafka's message, then close.
    Authenticate(Result<KafkaPrincipal, SaslFailure>),
    /// Send these bytes (SCRAM's server-first) and wait for the next.
    Challenge(Vec<u8>),
    /// Authenticated; send these last bytes (SCRAM's server-final).
    Complete {
        /// Who the client is.
        principal: KafkaPrincipal,
        /// The mechanism's last message.
        token: Vec<u8>,
    },
    /// A request not allowed now: Kafka closes the connection.
    Refuse(&'static str),
}

impl SaslExchange {
    /// A SaslHandshake naming `mechanism`, of those `enabled`.
    pub fn handshake(&mut self, mechanism: &str, enabled: &[String]) -> SaslStep {
        if *self != SaslExchange::AwaitingHandshake {
            return SaslStep::Refuse("a second SaslHandshake");
        }
        if !enabled.iter().any(|m| m == mechanism) {
            return SaslStep::Handshake { error_code: 33 };
        }
        *self = SaslExchange::Authenticating {
            mechanism: mechanism.to_string(),
        };
        SaslStep::Handshake { error_code: 0 }
    }

    /// The SCRAM mechanism whose client-first message is expected now:
    /// the caller looks the user's credential up
    /// ([`super::scram::client_first_user`]) and calls [`Self::scram_first`].
    pub fn awaiting_scram_first(&self) -> Option<ScramMechanism> {
        match self {
            SaslExchange::Authenticating { mechanism } => ScramMechanism::from_name(mechanism),
            _ => None,
        }
    }

    /// SCRAM's client-first message, with the user's credential (if any)
    /// and a fresh server nonce: the server-first message to send.
    pub fn scram_first(
        &mut self,
        mechanism: ScramMechanism,
        token: &[u8],
        credential: Option<ScramCredential>,
        server_nonce: &str,
    ) -> SaslStep {
        match ScramServer::start(mechanism, token, credential, server_nonce) {
            Ok((server, server_first)) => {
                *self = SaslExchange::ScramFinal(Box::new(server));
                SaslStep::Challenge(server_first.into_bytes())
            }
            Err(e) => SaslStep::Authenticate(Err(e.into())),
        }
    }

    /// A SaslAuthenticate carrying `token`: PLAIN's message checked by
    /// `plain` (the listener's users), or SCRAM's client-final message.
    pub fn authenticate(&mut self, token: &[u8], plain: &PlainUsers) -> SaslStep {
        if let SaslExchange::ScramFinal(server) = self {
            return match server.finish(token) {
                Ok((user, server_final)) => {
                    let principal = KafkaPrincipal::user(&user);
                    *self = SaslExchange::Authenticated(principal.clone());
                    SaslStep::Complete {
                        principal,
                        token: server_final.into_bytes(),
                    }
                }
                Err(e) => SaslStep::Authenticate(Err(e.into())),
            };
        }
        let SaslExchange::Authenticating { mechanism } = self else {
            return SaslStep::Refuse("SaslAuthenticate before SaslHandshake");
        };
        if mechanism != "PLAIN" {
            return SaslStep::Refuse("a mechanism this broker cannot run");
        }
        match plain.authenticate(token) {
            Ok(user) => {
                let principal = KafkaPrincipal::user(&user);
                *self = SaslExchange::Authenticated(principal.clone());
                SaslStep::Authenticate(Ok(principal))
            }
            Err(e) => SaslStep::Authenticate(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KAFKA_DOCS_JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin"
        password="admin-secret"
        user_admin="admin-secret"
        user_alice="alice-secret";"#;

    #[test]
    fn jaas_lines_parse_as_kafka_writes_them() {
        let entry = parse_jaas(KAFKA_DOCS_JAAS).expect("parses");
        assert_eq!(entry.login_module, PLAIN_LOGIN_MODULE);
        assert_eq!(entry.options["username"], "admin");
        assert_eq!(entry.options["user_alice"], "alice-secret");
        let users = PlainUsers::from_jaas(&entry);
        assert_eq!(users.len(), 2);
        assert_eq!(format!("{users:?}"), r#"["admin", "alice"]"#);
        let escaped = parse_jaas(r#"M required user_a="p\"w;d" flag=true;"#).expect("parses");
        assert_eq!(escaped.options["user_a"], "p\"w;d");
        assert_eq!(escaped.options["flag"], "true");
        assert!(parse_jaas("M required user_a=\"x\"").is_err(), "no ;");
        assert!(parse_jaas("M sometimes a=\"x\";").is_err());
        assert!(parse_jaas("M required a \"x\";").is_err());
        assert!(parse_jaas("M required a=\"unterminated;").is_err());
    }

    #[test]
    fn plain_checks_rfc_4616_messages() {
        let users = PlainUsers::from_jaas(&parse_jaas(KAFKA_DOCS_JAAS).expect("parses"));
        assert_eq!(
            users.authenticate(b"\0alice\0alice-secret"),
            Ok("alice".into())
        );
        assert_eq!(
            users.authenticate(b"alice\0alice\0alice-secret"),
            Ok("alice".into())
        );
        assert_eq!(
            users.authenticate(b"\0alice\0wrong"),
            Err(SaslFailure::BadCredentials)
        );
        assert_eq!(
            users.authenticate(b"\0alice\0alice-secre"),
            Err(SaslFailure::BadCredentials)
        );
        assert_eq!(
            users.authenticate(b"\0mallory\0alice-secret"),
            Err(SaslFailure::BadCredentials)
        );
        assert_eq!(
            users.authenticate(b"admin\0alice\0alice-secret"),
            Err(SaslFailure::AuthorizationId)
        );
        assert_eq!(
            users.authenticate(b"alice-secret"),
            Err(SaslFailure::Malformed)
        );
        assert_eq!(
            users.authenticate(b"\0alice\0pw\0extra"),
            Err(SaslFailure::Malformed)
        );
        assert_eq!(users.authenticate(b"\0\0"), Err(SaslFailure::Malformed));
        assert_eq!(
            users.authenticate(b"\0alice\0\xff"),
            Err(SaslFailure::Malformed)
        );
    }

    #[test]
    fn the_exchange_follows_kafkas_order() {
        let users = PlainUsers::from_jaas(&parse_jaas(KAFKA_DOCS_JAAS).expect("parses"));
        let enabled = vec!["PLAIN".to_string()];
        let mut exchange = SaslExchange::AwaitingHandshake;
        assert!(matches!(
            exchange.authenticate(b"\0alice\0alice-secret", &users),
            SaslStep::Refuse(_)
        ));
        assert_eq!(
            exchange.handshake("SCRAM-SHA-512", &enabled),
            SaslStep::Handshake { error_code: 33 }
        );
        assert_eq!(exchange, SaslExchange::AwaitingHandshake);
        assert_eq!(
            exchange.handshake("PLAIN", &enabled),
            SaslStep::Handshake { error_code: 0 }
        );
        assert!(matches!(
            exchange.handshake("PLAIN", &enabled),
            SaslStep::Refuse(_)
        ));
        assert_eq!(
            exchange.authenticate(b"\0alice\0nope", &users),
            SaslStep::Authenticate(Err(SaslFailure::BadCredentials))
        );
        assert_eq!(
            exchange.authenticate(b"\0alice\0alice-secret", &users),
            SaslStep::Authenticate(Ok(KafkaPrincipal::user("alice")))
        );
        assert_eq!(
            exchange,
            SaslExchange::Authenticated(KafkaPrincipal::user("alice"))
        );
        assert!(matches!(
            exchange.authenticate(b"\0alice\0alice-secret", &users),
            SaslStep::Refuse(_)
        ));
    }
}
