//! SCRAM credentials where Kafka's ZooKeeper mode keeps them: the
//! mechanism's entry of `/config/users/<sanitized user>`
//! (`{"version":1,"config":{"SCRAM-SHA-512":"salt=..,stored_key=..,
//! server_key=..,iterations=4096"}}`), announced by a
//! `/config/changes/config_change_<n>` notification naming `users/<user>`,
//! as `AdminZkClient.changeUserOrUserClientIdConfig` writes them. Read at
//! each authentication, so a credential written by any broker or by
//! Kafka's `kafka-configs --zookeeper` applies at once. Behind
//! DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::error::ResponseError;

use super::scram::{
    desanitize_user, sanitize_user, ScramCredential, ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS,
};
use crate::metadata::entity_config::{self, UpdateError};
use crate::metadata::store::{MetadataError, MetadataStore};
use crate::metadata::znodes::ConfigType;

/// A per-user failure: Kafka's code and message.
pub type UserError = (i16, String);

/// One AlterUserScramCredentials upsertion, as the wire carries it.
#[derive(Debug, Clone)]
pub struct Upsertion {
    /// The user.
    pub user: String,
    /// The mechanism's wire code (1: SHA-256, 2: SHA-512).
    pub mechanism: i8,
    /// PBKDF2 iterations the client used.
    pub iterations: i32,
    /// The salt.
    pub salt: Vec<u8>,
    /// `Hi(password, salt, iterations)`, computed by the client.
    pub salted_password: Vec<u8>,
}

/// Reads and writes the credentials in the metadata store.
#[derive(Debug)]
pub struct UserScramCredentials {
    store: Arc<dyn MetadataStore>,
}

impl UserScramCredentials {
    /// Over `store` (ZooKeeper or the embedded store).
    pub fn new(store: Arc<dyn MetadataStore>) -> UserScramCredentials {
        UserScramCredentials { store }
    }

    async fn read(
        &self,
        user: &str,
    ) -> Result<(BTreeMap<String, String>, Option<i32>), MetadataError> {
        entity_config::read(self.store.as_ref(), ConfigType::User, &sanitize_user(user)).await
    }

    /// The credential of `user` for `mechanism`; `None` if there is none
    /// or it cannot be read (the exchange then fails as for a wrong
    /// password), with a log line for the latter.
    pub async fn credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
    ) -> Option<ScramCredential> {
        match self.read(user).await {
            Ok((config, _)) => config
                .get(mechanism.name())
                .and_then(|text| ScramCredential::from_text(text)),
            Err(e) => {
                log::warn!("cannot read the SCRAM credentials of {user}: {e}");
                None
            }
        }
    }

    /// DescribeUserScramCredentials: each user's mechanisms and
    /// iterations; `None` describes every user that has any.
    pub async fn describe(
        &self,
        users: Option<Vec<String>>,
    ) -> Result<Vec<(String, Result<Vec<(ScramMechanism, u32)>, UserError>)>, MetadataError> {
        let all = users.is_none();
        let users = match users {
            Some(users) => users,
            None => match self.store.children("/config/users").await {
                Ok(names) => names.iter().map(|n| desanitize_user(n)).collect(),
                Err(MetadataError::NoNode(_)) => Vec::new(),
                Err(e) => return Err(e),
            },
        };
        let mut seen = BTreeSet::new();
        let mut results = Vec::new();
        for user in users {
            if !seen.insert(user.clone()) {
                results.push((
                    user,
                    Err((
                        ResponseError::DuplicateResource.code(),
                        "Cannot describe SCRAM credentials for the same user twice in a single request".into(),
                    )),
                ));
                continue;
            }
            let (config, _) = self.read(&user).await?;
            let infos: Vec<(ScramMechanism, u32)> =
                [ScramMechanism::Sha256, ScramMechanism::Sha512]
                    .into_iter()
                    .filter_map(|m| {
                        let credential = ScramCredential::from_text(config.get(m.name())?)?;
                        Some((m, credential.iterations))
                    })
                    .collect();
            if infos.is_empty() {
                if !all {
                    results.push((
                        user.clone(),
                        Err((
                            ResponseError::ResourceNotFound.code(),
                            format!(
                                "Attempt to describe a user credential that does not exist: {user}"
                            ),
                        )),
                    ));
                }
                continue;
            }
            results.push((user, Ok(infos)));
        }
        Ok(results)
    }

    /// AlterUserScramCredentials: Kafka's checks (a user named once in the
    /// whole request, known mechanisms, iterations within Kafka's bounds,
    /// deletions of existing credentials), then one write of each user's
    /// znode and a change notification.
    pub async fn alter(
        &self,
        deletions: Vec<(String, i8)>,
        upsertions: Vec<Upsertion>,
    ) -> Vec<(String, Result<(), UserError>)> {
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for user in deletions
            .iter()
            .map(|d| &d.0)
            .chain(upsertions.iter().map(|u| &u.user))
        {
            *count.entry(user.clone()).or_default() += 1;
        }
        let mut changes: BTreeMap<String, Vec<Change>> = BTreeMap::new();
        let mut results: BTreeMap<String, Result<(), UserError>> = BTreeMap::new();
        let refuse = |code: ResponseError, message: String| Err((code.code(), message));
        for (user, mechanism) in deletions {
            let outcome = if user.is_empty() {
                refuse(
                    ResponseError::UnacceptableCredential,
                    "Username must not be empty".into(),
                )
            } else if count[&user] > 1 {
                refuse(
                    ResponseError::DuplicateResource,
                    format!(
                        "A user credential cannot be altered twice in the same request: {user}"
                    ),
                )
            } else {
                match ScramMechanism::from_code(mechanism) {
                    None => refuse(
                        ResponseError::UnsupportedSaslMechanism,
                        format!("Unknown SCRAM mechanism {mechanism}"),
                    ),
                    Some(m) => {
                        changes
                            .entry(user.clone())
                            .or_default()
                            .push(Change::Delete(m));
                        Ok(())
                    }
                }
            };
            results.insert(user, outcome);
        }
        for u in upsertions {
            let outcome = if u.user.is_empty() {
                refuse(
                    ResponseError::UnacceptableCredential,
                    "Username must not be empty".into(),
                )
            } else if count[&u.user] > 1 {
                refuse(
                    ResponseError::DuplicateResource,
                    format!(
                        "A user credential cannot be altered twice in the same request: {}",
                        u.user
                    ),
                )
            } else {
                match ScramMechanism::from_code(u.mechanism) {
                    None => refuse(ResponseError::UnsupportedSaslMechanism, format!("Unknown SCRAM mechanism {}", u.mechanism)),
                    Some(m) if !(MIN_ITERATIONS as i32..=MAX_ITERATIONS as i32).contains(&u.iterations) => refuse(
                        ResponseError::UnacceptableCredential,
                        format!("Iterations {} must be between {MIN_ITERATIONS} and {MAX_ITERATIONS} for {}", u.iterations, m.name()),
                    ),
                    Some(_) if u.salt.is_empty() || u.salted_password.is_empty() => refuse(
                        ResponseError::UnacceptableCredential,
                        "Salt and salted password must not be empty".into(),
                    ),
                    Some(m) => {
                        let credential = ScramCredential::from_salted(m, &u.salted_password, &u.salt, u.iterations as u32);
                        changes.entry(u.user.clone()).or_default().push(Change::Upsert(m, credential));
                        Ok(())
                    }
                }
            };
            results.insert(u.user, outcome);
        }
        for (user, user_changes) in changes {
            if let Err(e) = self.apply(&user, &user_changes).await {
                results.insert(user, Err(e));
            }
        }
        results.into_iter().collect()
    }

    async fn apply(&self, user: &str, changes: &[Change]) -> Result<(), UserError> {
        let updated = entity_config::update(
            self.store.as_ref(),
            ConfigType::User,
            &sanitize_user(user),
            |config| {
                for change in changes {
                    match change {
                        Change::Delete(m) => {
                            if config.remove(m.name()).is_none() {
                                return Err((
                                    ResponseError::ResourceNotFound.code(),
                                    format!("Attempt to delete a user credential that does not exist: {user} {}", m.name()),
                                ));
                            }
                        }
                        Change::Upsert(m, credential) => {
                            config.insert(m.name().to_string(), credential.to_text());
                        }
                    }
                }
                Ok(true)
            },
        )
        .await;
        match updated {
            Ok(()) => Ok(()),
            Err(UpdateError::Refused(e)) => Err(e),
            Err(UpdateError::Store(e)) => {
                Err((ResponseError::UnknownServerError.code(), e.to_string()))
            }
        }
    }
}

enum Change {
    Delete(ScramMechanism),
    Upsert(ScramMechanism, ScramCredential),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::embedded::EmbeddedStore;

    #[tokio::test(flavor = "current_thread")]
    async fn credentials_are_written_and_read_as_kafka_keeps_them() {
        let store: Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
        crate::metadata::ensure_paths(store.as_ref())
            .await
            .expect("paths");
        let credentials = UserScramCredentials::new(store.clone());
        let salted = pbkdf2::pbkdf2_hmac_array::<sha2::Sha512, 64>(b"alice-secret", b"salt", 4096);
        let results = credentials
            .alter(
                vec![("bob".into(), 1)],
                vec![
                    Upsertion {
                        user: "alice".into(),
                        mechanism: 2,
                        iterations: 4096,
                        salt: b"salt".to_vec(),
                        salted_password: salted.to_vec(),
                    },
                    Upsertion {
                        user: "carol".into(),
                        mechanism: 2,
                        iterations: 100,
                        salt: b"s".to_vec(),
                        salted_password: b"p".to_vec(),
                    },
                    Upsertion {
                        user: "dave".into(),
                        mechanism: 9,
                        iterations: 4096,
                        salt: b"s".to_vec(),
                        salted_password: b"p".to_vec(),
                    },
                ],
            )
            .await;
        let codes: BTreeMap<String, i16> = results
            .into_iter()
            .map(|(u, r)| (u, r.err().map_or(0, |e| e.0)))
            .collect();
        assert_eq!(codes["alice"], 0);
        assert_eq!(codes["bob"], ResponseError::ResourceNotFound.code());
        assert_eq!(codes["carol"], ResponseError::UnacceptableCredential.code());
        assert_eq!(
            codes["dave"],
            ResponseError::UnsupportedSaslMechanism.code()
        );
        let (bytes, _) = store
            .get("/config/users/alice")
            .await
            .expect("read")
            .expect("written");
        let text = String::from_utf8(bytes).expect("utf8");
        assert!(
            text.starts_with(
                r#"{"version":1,"config":{"SCRAM-SHA-512":"salt=c2FsdA==,stored_key="#
            ),
            "{text}"
        );
        assert_eq!(
            store
                .children(crate::metadata::znodes::ConfigEntityChangeNotificationZNode::PATH)
                .await
                .expect("changes")
                .len(),
            1
        );
        let expected = ScramCredential::new(ScramMechanism::Sha512, "alice-secret", b"salt", 4096);
        assert_eq!(
            credentials
                .credential("alice", ScramMechanism::Sha512)
                .await,
            Some(expected)
        );
        assert_eq!(
            credentials
                .credential("alice", ScramMechanism::Sha256)
                .await,
            None
        );
        let described = credentials.describe(None).await.expect("described");
        assert_eq!(
            described,
            vec![(
                "alice".to_string(),
                Ok(vec![(ScramMechanism::Sha512, 4096)])
            )]
        );
        let described = credentials
            .describe(Some(vec!["zed".into()]))
            .await
            .expect("described");
        assert_eq!(
            described[0].1.as_ref().err().map(|e| e.0),
            Some(ResponseError::ResourceNotFound.code())
        );
        let deleted = credentials
            .alter(vec![("alice".into(), 2)], Vec::new())
            .await;
        assert!(deleted[0].1.is_ok());
        assert_eq!(
            credentials
                .credential("alice", ScramMechanism::Sha512)
                .await,
            None
        );
    }
}
