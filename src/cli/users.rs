//! `ferrolog users`: SCRAM users (KIP-554), as `kafka-configs
//! --entity-type users --alter --add-config 'SCRAM-SHA-512=[...]'` and
//! `kafka-configs --describe --entity-type users` manage them. The salted
//! password is computed here, as Kafka's Admin client does: the password
//! never crosses the network.

use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use super::connection::{refusal, CliError, Cluster};
use super::{print, table, ConnectionArgs};
use crate::security::scram::ScramMechanism;

/// What `ferrolog users` does.
#[derive(clap::Subcommand, Debug)]
pub enum UsersAction {
    /// Every SCRAM user (or one) with its mechanisms and iterations.
    List {
        /// Only this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// Add a user's SCRAM credential, or replace it.
    Add {
        /// The user.
        #[arg(long)]
        user: String,
        /// The password.
        #[arg(long)]
        password: String,
        /// SCRAM-SHA-256 or SCRAM-SHA-512.
        #[arg(long, default_value = "SCRAM-SHA-512")]
        mechanism: String,
        /// PBKDF2 iterations (Kafka's minimum and default: 4096).
        #[arg(long, default_value_t = 4096)]
        iterations: i32,
    },
    /// Delete a user's SCRAM credential.
    Delete {
        /// The user.
        #[arg(long)]
        user: String,
        /// SCRAM-SHA-256 or SCRAM-SHA-512.
        #[arg(long, default_value = "SCRAM-SHA-512")]
        mechanism: String,
    },
}

#[derive(Serialize)]
struct UserView {
    user: String,
    credentials: Vec<(String, i32)>,
}

fn mechanism(name: &str) -> Result<ScramMechanism, CliError> {
    ScramMechanism::from_name(name).ok_or_else(|| {
        CliError::Usage(format!(
            "--mechanism {name}: SCRAM-SHA-256 or SCRAM-SHA-512"
        ))
    })
}

pub async fn run(action: UsersAction, args: &ConnectionArgs) -> Result<(), CliError> {
    let (cluster, metadata) = Cluster::connect(args).await?;
    match action {
        UsersAction::List { user } => {
            let request = DescribeUserScramCredentialsRequest::default()
                .with_users(user.as_ref().map(|u| {
                    vec![UserName::default().with_name(StrBytes::from_string(u.clone()))]
                }));
            let response: DescribeUserScramCredentialsResponse = cluster
                .ask_any(&metadata, ApiKey::DescribeUserScramCredentials, 0, &request)
                .await?;
            if response.error_code != 0 {
                return Err(refusal(
                    "describing the users",
                    response.error_code,
                    response.error_message.as_deref(),
                ));
            }
            let mut users = Vec::new();
            for result in response.results {
                if result.error_code != 0 {
                    return Err(refusal(
                        &format!("describing {}", result.user),
                        result.error_code,
                        result.error_message.as_deref(),
                    ));
                }
                users.push(UserView {
                    user: result.user.to_string(),
                    credentials: result
                        .credential_infos
                        .iter()
                        .map(|c| {
                            let name = ScramMechanism::from_code(c.mechanism)
                                .map_or("UNKNOWN", ScramMechanism::name);
                            (name.to_string(), c.iterations)
                        })
                        .collect(),
                });
            }
            users.sort_by(|a, b| a.user.cmp(&b.user));
            print(args.json, &users, || {
                let rows = users
                    .iter()
                    .flat_map(|u| {
                        u.credentials
                            .iter()
                            .map(move |(m, i)| vec![u.user.clone(), m.clone(), i.to_string()])
                    })
                    .collect();
                table(&["USER", "MECHANISM", "ITERATIONS"], rows)
            });
            Ok(())
        }
        UsersAction::Add {
            user,
            password,
            mechanism: name,
            iterations,
        } => {
            let mechanism = mechanism(&name)?;
            if iterations < 4096 {
                return Err(CliError::Usage(
                    "--iterations: at least 4096, as Kafka".into(),
                ));
            }
            // 32 random bytes (two v4 UUIDs' worth).
            let mut salt = uuid::Uuid::new_v4().as_bytes().to_vec();
            salt.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
            let salted = mechanism.salted_password(password.as_bytes(), &salt, iterations as u32);
            let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![
                ScramCredentialUpsertion::default()
                    .with_name(StrBytes::from_string(user.clone()))
                    .with_mechanism(mechanism.code())
                    .with_iterations(iterations)
                    .with_salt(salt.into())
                    .with_salted_password(salted.into()),
            ]);
            alter(&cluster, &metadata, &request, &user).await?;
            let done =
                serde_json::json!({ "user": user, "mechanism": name, "iterations": iterations });
            print(args.json, &done, || {
                format!("Added {name} credentials for {user}.")
            });
            Ok(())
        }
        UsersAction::Delete {
            user,
            mechanism: name,
        } => {
            let request = AlterUserScramCredentialsRequest::default().with_deletions(vec![
                ScramCredentialDeletion::default()
                    .with_name(StrBytes::from_string(user.clone()))
                    .with_mechanism(mechanism(&name)?.code()),
            ]);
            alter(&cluster, &metadata, &request, &user).await?;
            let done = serde_json::json!({ "deleted": user, "mechanism": name });
            print(args.json, &done, || {
                format!("Deleted {name} credentials of {user}.")
            });
            Ok(())
        }
    }
}

/// AlterUserScramCredentials goes to the controller in ZooKeeper mode.
async fn alter(
    cluster: &Cluster,
    metadata: &kafka_protocol::messages::MetadataResponse,
    request: &AlterUserScramCredentialsRequest,
    user: &str,
) -> Result<(), CliError> {
    let response: AlterUserScramCredentialsResponse = cluster
        .ask_controller(metadata, ApiKey::AlterUserScramCredentials, 0, request)
        .await?;
    match response.results.iter().find(|r| r.error_code != 0) {
        Some(r) => Err(refusal(
            &format!("changing {user}'s credentials"),
            r.error_code,
            r.error_message.as_deref(),
        )),
        None => Ok(()),
    }
}
