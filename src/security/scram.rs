//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) on the broker
//! side, as pure code, with credentials kept as Kafka keeps them: the
//! `SCRAM-SHA-512` entry of `/config/users/<user>` is
//! `salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>`,
//! so credentials written by Kafka's `kafka-configs` (through ZooKeeper or
//! AlterUserScramCredentials) work here and the other way round.
//! The exchange is Kafka's `ScramSaslServer`: client-first, server-first
//! (our nonce appended to the client's, the salt, the iterations),
//! client-final (the nonce checked, the proof checked in constant time),
//! server-final (the server signature).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

/// Kafka's floor on iterations (`ScramMechanism.minIterations`).
pub const MIN_ITERATIONS: u32 = 4096;
/// Kafka's ceiling (`ScramMechanism.maxIterations`).
pub const MAX_ITERATIONS: u32 = 16384;

/// The two SCRAM mechanisms Kafka runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScramMechanism {
    /// `SCRAM-SHA-256` (wire code 1 in the user SCRAM credential APIs).
    Sha256,
    /// `SCRAM-SHA-512` (wire code 2).
    Sha512,
}

impl ScramMechanism {
    /// The mechanism's SASL name, also its key in `/config/users/<user>`.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism a SASL name names.
    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        match name {
            "SCRAM-SHA-256" => Some(ScramMechanism::Sha256),
            "SCRAM-SHA-512" => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    /// The code DescribeUserScramCredentials and AlterUserScramCredentials use.
    pub fn code(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    /// The mechanism of a wire code.
    pub fn from_code(code: i8) -> Option<ScramMechanism> {
        match code {
            1 => Some(ScramMechanism::Sha256),
            2 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => mac::<Hmac<Sha256>>(key, data),
            ScramMechanism::Sha512 => mac::<Hmac<Sha512>>(key, data),
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// RFC 5802's `Hi`: PBKDF2 with HMAC of the mechanism's hash.
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password, salt, iterations).to_vec()
            }
            ScramMechanism::Sha512 => {
                pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password, salt, iterations).to_vec()
            }
        }
    }
}

fn mac<M: Mac + hmac::digest::KeyInit>(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length: this cannot fail.
    match <M as hmac::digest::KeyInit>::new_from_slice(key) {
        Ok(mut m) => {
            m.update(data);
            m.finalize().into_bytes().to_vec()
        }
        Err(_) => Vec::new(),
    }
}

/// One user's credential for one mechanism, as Kafka stores it.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    /// The salt.
    pub salt: Vec<u8>,
    /// `H(ClientKey)`.
    pub stored_key: Vec<u8>,
    /// `HMAC(SaltedPassword, "Server Key")`.
    pub server_key: Vec<u8>,
    /// PBKDF2 iterations.
    pub iterations: u32,
}

impl std::fmt::Debug for ScramCredential {
    // Keys stay out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScramCredential(iterations={})", self.iterations)
    }
}

impl ScramCredential {
    /// The credential of `password` (Kafka's `ScramFormatter.generateCredential`).
    pub fn new(mechanism: ScramMechanism, password: &str, salt: &[u8], iterations: u32) -> Self {
        let salted = mechanism.salted_password(password.as_bytes(), salt, iterations);
        let client_key = mechanism.hmac(&salted, b"Client Key");
        ScramCredential {
            salt: salt.to_vec(),
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(&salted, b"Server Key"),
            iterations,
        }
    }

    /// A credential from the `salted_password` AlterUserScramCredentials
    /// carries (clients salt and hash the password themselves).
    pub fn from_salted(
        mechanism: ScramMechanism,
        salted: &[u8],
        salt: &[u8],
        iterations: u32,
    ) -> Self {
        let client_key = mechanism.hmac(salted, b"Client Key");
        ScramCredential {
            salt: salt.to_vec(),
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(salted, b"Server Key"),
            iterations,
        }
    }

    /// Kafka's text: `salt=..,stored_key=..,server_key=..,iterations=..`.
    pub fn to_text(&self) -> String {
        format!(
            "salt={},stored_key={},server_key={},iterations={}",
            STANDARD.encode(&self.salt),
            STANDARD.encode(&self.stored_key),
            STANDARD.encode(&self.server_key),
            self.iterations
        )
    }

    /// Kafka's text back; `None` if it is not that.
    pub fn from_text(text: &str) -> Option<ScramCredential> {
        let mut salt = None;
        let mut stored_key = None;
        let mut server_key = None;
        let mut iterations = None;
        for field in text.split(',') {
            let (key, value) = field.split_once('=')?;
            match key.trim() {
                "salt" => salt = STANDARD.decode(value.trim()).ok(),
                "stored_key" => stored_key = STANDARD.decode(value.trim()).ok(),
                "server_key" => server_key = STANDARD.decode(value.trim()).ok(),
                "iterations" => iterations = value.trim().parse().ok(),
                _ => {}
            }
        }
        Some(ScramCredential {
            salt: salt?,
            stored_key: stored_key?,
            server_key: server_key?,
            iterations: iterations?,
        })
    }
}

/// Why a SCRAM exchange failed; the message is what the client is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    /// A message that is not RFC 5802's.
    #[error("Authentication failed: invalid SCRAM message")]
    Malformed,
    /// An authorization id other than the user (Kafka refuses it).
    #[error("Authentication failed: Client requested an authorization id that is different from username")]
    AuthorizationId,
    /// Unknown user, wrong password, wrong nonce: not told apart.
    #[error("Authentication failed during authentication due to invalid credentials with SASL mechanism {0}")]
    InvalidCredentials(&'static str),
}

/// The client-first message's user (its `saslname` decoded).
pub fn client_first_user(message: &[u8]) -> Result<String, ScramError> {
    Ok(parse_client_first(message)?.user)
}

struct ClientFirst {
    user: String,
    nonce: String,
    /// Everything after the GS2 header (`n=..,r=..`).
    bare: String,
    /// The GS2 header (`n,,`), bound in the final message's `c=`.
    gs2_header: String,
}

fn parse_client_first(message: &[u8]) -> Result<ClientFirst, ScramError> {
    let text = std::str::from_utf8(message).map_err(|_| ScramError::Malformed)?;
    // gs2-header: ("n" | "y") "," [ "a=" authzid ] ","; channel binding
    // ("p=") is not offered by Kafka.
    let mut parts = text.splitn(3, ',');
    let (Some(binding), Some(authzid), Some(bare)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(ScramError::Malformed);
    };
    if binding != "n" && binding != "y" {
        return Err(ScramError::Malformed);
    }
    let mut user = None;
    let mut nonce = None;
    for attribute in bare.split(',') {
        if let Some(name) = attribute.strip_prefix("n=") {
            user = Some(decode_saslname(name)?);
        } else if let Some(value) = attribute.strip_prefix("r=") {
            nonce = Some(value.to_string());
        } else if attribute.starts_with("m=") {
            // Mandatory extensions this server does not know.
            return Err(ScramError::Malformed);
        }
    }
    let (Some(user), Some(nonce)) = (user, nonce) else {
        return Err(ScramError::Malformed);
    };
    if user.is_empty()
        || nonce.is_empty()
        || !nonce.chars().all(|c| c.is_ascii_graphic() && c != ',')
    {
        return Err(ScramError::Malformed);
    }
    if let Some(authzid) = authzid.strip_prefix("a=") {
        if decode_saslname(authzid)? != user {
            return Err(ScramError::AuthorizationId);
        }
    } else if !authzid.is_empty() {
        return Err(ScramError::Malformed);
    }
    Ok(ClientFirst {
        user,
        nonce,
        bare: bare.to_string(),
        gs2_header: format!("{binding},{authzid},"),
    })
}

/// RFC 5802's saslname: `=2C` is `,` and `=3D` is `=`; any other `=` is
/// malformed.
fn decode_saslname(name: &str) -> Result<String, ScramError> {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        match rest.get(at..at + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(ScramError::Malformed),
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A SCRAM exchange after the client-first message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramServer {
    mechanism: ScramMechanism,
    user: String,
    /// `None`: the user has no credential; the exchange goes on and fails
    /// at the proof, so a client cannot tell unknown users from bad
    /// passwords.
    credential: Option<ScramCredential>,
    nonce: String,
    client_first_bare: String,
    server_first: String,
    gs2_header: String,
}

impl ScramServer {
    /// Answers the client-first message: the server-first message.
    /// `server_nonce` is fresh random printable text; `credential` the
    /// user's, if any (a dummy salt stands in otherwise).
    pub fn start(
        mechanism: ScramMechanism,
        client_first: &[u8],
        credential: Option<ScramCredential>,
        server_nonce: &str,
    ) -> Result<(ScramServer, String), ScramError> {
        let first = parse_client_first(client_first)?;
        let nonce = format!("{}{server_nonce}", first.nonce);
        let (salt, iterations) = match &credential {
            Some(c) => (c.salt.clone(), c.iterations),
            None => (mechanism.hash(first.user.as_bytes()), MIN_ITERATIONS),
        };
        let server_first = format!("r={nonce},s={},i={iterations}", STANDARD.encode(salt));
        Ok((
            ScramServer {
                mechanism,
                user: first.user,
                credential,
                nonce,
                client_first_bare: first.bare,
                server_first: server_first.clone(),
                gs2_header: first.gs2_header,
            },
            server_first,
        ))
    }

    /// The user the exchange is for.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Checks the client-final message: the user on success, with the
    /// server-final message to send.
    pub fn finish(&self, client_final: &[u8]) -> Result<(String, String), ScramError> {
        let invalid = ScramError::InvalidCredentials(self.mechanism.name());
        let text = std::str::from_utf8(client_final).map_err(|_| ScramError::Malformed)?;
        let (without_proof, proof) = text.rsplit_once(",p=").ok_or(ScramError::Malformed)?;
        let mut binding = None;
        let mut nonce = None;
        for attribute in without_proof.split(',') {
            if let Some(value) = attribute.strip_prefix("c=") {
                binding = Some(value);
            } else if let Some(value) = attribute.strip_prefix("r=") {
                nonce = Some(value);
            }
        }
        let (Some(binding), Some(nonce)) = (binding, nonce) else {
            return Err(ScramError::Malformed);
        };
        if STANDARD.decode(binding).ok().as_deref() != Some(self.gs2_header.as_bytes()) {
            return Err(invalid);
        }
        if nonce != self.nonce {
            return Err(invalid);
        }
        let proof = STANDARD.decode(proof).map_err(|_| ScramError::Malformed)?;
        let Some(credential) = &self.credential else {
            return Err(invalid);
        };
        let auth_message = format!(
            "{},{},{without_proof}",
            self.client_first_bare, self.server_first
        );
        let client_signature = self
            .mechanism
            .hmac(&credential.stored_key, auth_message.as_bytes());
        if proof.len() != client_signature.len() {
            return Err(invalid);
        }
        let client_key: Vec<u8> = proof
            .iter()
            .zip(&client_signature)
            .map(|(p, s)| p ^ s)
            .collect();
        if !constant_time_eq(&self.mechanism.hash(&client_key), &credential.stored_key) {
            return Err(invalid);
        }
        let server_signature = self
            .mechanism
            .hmac(&credential.server_key, auth_message.as_bytes());
        Ok((
            self.user.clone(),
            format!("v={}", STANDARD.encode(server_signature)),
        ))
    }
}

/// The client side of one SCRAM exchange (a broker logging in to another
/// on the inter-broker listener): client-first, then client-final from the
/// server-first, then the server-final checked, so a broker that does not
/// know the password is not believed either.
pub struct ScramClient {
    mechanism: ScramMechanism,
    password: String,
    nonce: String,
    client_first_bare: String,
    /// `HMAC(ServerKey, AuthMessage)`, once client-final is sent.
    server_signature: Option<Vec<u8>>,
}

impl std::fmt::Debug for ScramClient {
    // The password stays out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScramClient({})", self.mechanism.name())
    }
}

impl ScramClient {
    /// The exchange for `user`, and its client-first message.
    pub fn start(
        mechanism: ScramMechanism,
        user: &str,
        password: &str,
        nonce: &str,
    ) -> (ScramClient, String) {
        let name = user.replace('=', "=3D").replace(',', "=2C");
        let client_first_bare = format!("n={name},r={nonce}");
        let client = ScramClient {
            mechanism,
            password: password.to_string(),
            nonce: nonce.to_string(),
            client_first_bare: client_first_bare.clone(),
            server_signature: None,
        };
        (client, format!("n,,{client_first_bare}"))
    }

    /// The client-final message answering `server_first`; refused when the
    /// server's nonce does not extend ours or its iterations are out of
    /// Kafka's bounds.
    pub fn respond(&mut self, server_first: &[u8]) -> Result<String, ScramError> {
        let text = std::str::from_utf8(server_first).map_err(|_| ScramError::Malformed)?;
        let (mut nonce, mut salt, mut iterations) = (None, None, None);
        for attribute in text.split(',') {
            if let Some(v) = attribute.strip_prefix("r=") {
                nonce = Some(v);
            } else if let Some(v) = attribute.strip_prefix("s=") {
                salt = STANDARD.decode(v).ok();
            } else if let Some(v) = attribute.strip_prefix("i=") {
                iterations = v.parse::<u32>().ok();
            }
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
            return Err(ScramError::Malformed);
        };
        if !nonce.starts_with(&self.nonce)
            || nonce.len() == self.nonce.len()
            || !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations)
        {
            return Err(ScramError::InvalidCredentials(self.mechanism.name()));
        }
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{text},{without_proof}", self.client_first_bare);
        let salted = self
            .mechanism
            .salted_password(self.password.as_bytes(), &salt, iterations);
        let client_key = self.mechanism.hmac(&salted, b"Client Key");
        let stored_key = self.mechanism.hash(&client_key);
        let signature = self.mechanism.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = self.mechanism.hmac(&salted, b"Server Key");
        self.server_signature = Some(self.mechanism.hmac(&server_key, auth_message.as_bytes()));
        Ok(format!("{without_proof},p={}", STANDARD.encode(proof)))
    }

    /// Checks the server-final message: the server knew the credential.
    pub fn verify(&self, server_final: &[u8]) -> Result<(), ScramError> {
        let invalid = ScramError::InvalidCredentials(self.mechanism.name());
        let text = std::str::from_utf8(server_final).map_err(|_| ScramError::Malformed)?;
        let signature = text
            .strip_prefix("v=")
            .and_then(|v| STANDARD.decode(v).ok())
            .ok_or(invalid.clone())?;
        match &self.server_signature {
            Some(expected) if constant_time_eq(expected, &signature) => Ok(()),
            _ => Err(invalid),
        }
    }
}

/// Kafka's `Sanitizer.sanitize`: a user name as its znode is named
/// (`URLEncoder` with `*` and space percent-encoded).
pub fn sanitize_user(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'_' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// [`sanitize_user`] undone (a znode name back to the user).
pub fn desanitize_user(name: &str) -> String {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client and server sides agree, and each refuses the other's
    /// lies: a wrong password, and a server that does not know the key.
    #[test]
    fn the_client_logs_in_and_checks_the_server() {
        let credential = ScramCredential::new(ScramMechanism::Sha512, "secret", b"salty", 4096);
        let login = |password: &str| {
            let (mut client, first) =
                ScramClient::start(ScramMechanism::Sha512, "bro,ker", password, "clientnonce");
            let (server, server_first) = ScramServer::start(
                ScramMechanism::Sha512,
                first.as_bytes(),
                Some(credential.clone()),
                "servernonce",
            )
            .expect("client-first parses");
            assert_eq!(server.user(), "bro,ker");
            let last = client
                .respond(server_first.as_bytes())
                .expect("client-final");
            server
                .finish(last.as_bytes())
                .map(|(_, server_final)| (client, server_final))
        };
        let (client, server_final) = login("secret").expect("the right password");
        client
            .verify(server_final.as_bytes())
            .expect("the server knew the key");
        assert!(client.verify(b"v=AAAA").is_err());
        assert!(login("wrong").is_err());
        let (mut client, _) = ScramClient::start(ScramMechanism::Sha256, "u", "p", "abc");
        assert!(
            client.respond(b"r=xyz,s=AAAA,i=4096").is_err(),
            "not our nonce"
        );
        assert!(
            client.respond(b"r=abcd,s=AAAA,i=100").is_err(),
            "too few iterations"
        );
    }

    /// A client's side of the exchange, as RFC 5802 computes it.
    fn client_final(
        mechanism: ScramMechanism,
        password: &str,
        client_first_bare: &str,
        server_first: &str,
    ) -> String {
        let fields: Vec<&str> = server_first.split(',').collect();
        let nonce = &fields[0][2..];
        let salt = STANDARD.decode(&fields[1][2..]).expect("salt");
        let iterations: u32 = fields[2][2..].parse().expect("iterations");
        let salted = mechanism.salted_password(password.as_bytes(), &salt, iterations);
        let client_key = mechanism.hmac(&salted, b"Client Key");
        let stored_key = mechanism.hash(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let signature = mechanism.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        format!("{without_proof},p={}", STANDARD.encode(proof))
    }

    /// RFC 7677's SCRAM-SHA-256 example, end to end.
    #[test]
    fn rfc_7677_example() {
        let mechanism = ScramMechanism::Sha256;
        let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("salt");
        let credential = ScramCredential::new(mechanism, "pencil", &salt, 4096);
        let (server, server_first) = ScramServer::start(
            mechanism,
            b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
            Some(credential),
            "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
        )
        .expect("client-first");
        assert_eq!(
            server_first,
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        );
        let (user, server_final) = server
            .finish(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
            .expect("the RFC's proof");
        assert_eq!(user, "user");
        assert_eq!(
            server_final,
            "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
    }

    #[test]
    fn user_names_are_sanitized_as_kafka_does() {
        assert_eq!(sanitize_user("alice"), "alice");
        assert_eq!(sanitize_user("a b*c@d"), "a%20b%2Ac%40d");
        assert_eq!(desanitize_user("a%20b%2Ac%40d"), "a b*c@d");
        assert_eq!(desanitize_user(&sanitize_user("üser/x")), "üser/x");
    }

    #[test]
    fn credentials_round_trip_through_kafkas_text() {
        let credential =
            ScramCredential::new(ScramMechanism::Sha512, "alice-secret", b"salty", 4096);
        let text = credential.to_text();
        assert!(text.starts_with("salt=c2FsdHk=,stored_key="), "{text}");
        assert!(text.ends_with(",iterations=4096"), "{text}");
        assert_eq!(ScramCredential::from_text(&text), Some(credential));
        assert_eq!(ScramCredential::from_text("salt=x"), None);
    }

    #[test]
    fn wrong_passwords_nonces_and_replays_fail() {
        for mechanism in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            let credential = ScramCredential::new(mechanism, "secret", b"0123456789abcdef", 4096);
            let first = "n,,n=alice,r=clientnonce";
            let start = |nonce: &str| {
                ScramServer::start(mechanism, first.as_bytes(), Some(credential.clone()), nonce)
                    .expect("client-first")
            };
            let (server, server_first) = start("servernonce1");
            let good = client_final(mechanism, "secret", "n=alice,r=clientnonce", &server_first);
            assert_eq!(
                server.finish(good.as_bytes()).map(|(u, _)| u),
                Ok("alice".into())
            );
            let bad = client_final(mechanism, "guess", "n=alice,r=clientnonce", &server_first);
            assert_eq!(
                server.finish(bad.as_bytes()),
                Err(ScramError::InvalidCredentials(mechanism.name()))
            );
            // Replayed against a new exchange (another server nonce): refused.
            let (fresh, _) = start("servernonce2");
            assert!(fresh.finish(good.as_bytes()).is_err());
            // A tampered proof byte.
            let mut tampered = good.clone().into_bytes();
            let last = tampered.len() - 3;
            tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
            assert!(server.finish(&tampered).is_err());
            // An unknown user fails at the proof, like a wrong password.
            let (unknown, server_first) =
                ScramServer::start(mechanism, b"n,,n=mallory,r=n1", None, "n2").expect("goes on");
            let guess = client_final(mechanism, "secret", "n=mallory,r=n1", &server_first);
            assert_eq!(
                unknown.finish(guess.as_bytes()),
                Err(ScramError::InvalidCredentials(mechanism.name()))
            );
        }
    }

    #[test]
    fn malformed_client_first_messages_are_refused() {
        let m = ScramMechanism::Sha256;
        for bad in [
            &b""[..],
            b"n,,",
            b"x,,n=a,r=b",
            b"n,,r=b",
            b"n,,n=a",
            b"n,,n=a=,r=b",
            b"n,,n=a,r=b,m=ext",
            b"\xff",
        ] {
            assert!(ScramServer::start(m, bad, None, "s").is_err(), "{bad:?}");
        }
        assert_eq!(
            ScramServer::start(m, b"n,a=bob,n=alice,r=b", None, "s").err(),
            Some(ScramError::AuthorizationId)
        );
        assert_eq!(client_first_user(b"n,,n=a=2Cb=3Dc,r=x"), Ok("a,b=c".into()));
    }
}
