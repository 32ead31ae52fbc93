//! DescribeUserScramCredentials (key 50) and AlterUserScramCredentials
//! (key 51), v0 (KIP-554), over `security::credentials`. As in Kafka:
//! describing needs DESCRIBE on the cluster, altering ALTER
//! (CLUSTER_AUTHORIZATION_FAILED otherwise); the client sends the salted
//! password, never the password.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::BrokerContext;
use crate::security::acl::AclOperation;
use crate::security::credentials::Upsertion;
use crate::security::Session;

pub async fn describe(
    ctx: &BrokerContext,
    session: &Session,
    request: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    if !ctx.authorize_cluster(session, AclOperation::Describe) {
        return DescribeUserScramCredentialsResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    let users = request
        .users
        .map(|users| users.iter().map(|u| u.name.to_string()).collect());
    match ctx.scram_credentials.describe(users).await {
        Ok(described) => DescribeUserScramCredentialsResponse::default().with_results(
            described
                .into_iter()
                .map(|(user, result)| {
                    let answer = DescribeUserScramCredentialsResult::default()
                        .with_user(StrBytes::from_string(user));
                    match result {
                        Ok(infos) => answer.with_credential_infos(
                            infos
                                .into_iter()
                                .map(|(mechanism, iterations)| {
                                    CredentialInfo::default()
                                        .with_mechanism(mechanism.code())
                                        .with_iterations(iterations as i32)
                                })
                                .collect(),
                        ),
                        Err((code, message)) => answer
                            .with_error_code(code)
                            .with_error_message(Some(StrBytes::from_string(message))),
                    }
                })
                .collect(),
        ),
        Err(e) => {
            log::warn!("DescribeUserScramCredentials: {e}");
            DescribeUserScramCredentialsResponse::default()
                .with_error_code(ResponseError::UnknownServerError.code())
                .with_error_message(Some(StrBytes::from_string(e.to_string())))
        }
    }
}

pub async fn alter(
    ctx: &BrokerContext,
    session: &Session,
    request: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let users: Vec<StrBytes> = request
        .deletions
        .iter()
        .map(|d| d.name.clone())
        .chain(request.upsertions.iter().map(|u| u.name.clone()))
        .collect();
    if !ctx.authorize_cluster(session, AclOperation::Alter) {
        return AlterUserScramCredentialsResponse::default().with_results(
            users
                .into_iter()
                .map(|user| {
                    AlterUserScramCredentialsResult::default()
                        .with_user(user)
                        .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
                })
                .collect(),
        );
    }
    let deletions = request
        .deletions
        .iter()
        .map(|d| (d.name.to_string(), d.mechanism))
        .collect();
    let upsertions = request
        .upsertions
        .iter()
        .map(|u| Upsertion {
            user: u.name.to_string(),
            mechanism: u.mechanism,
            iterations: u.iterations,
            salt: u.salt.to_vec(),
            salted_password: u.salted_password.to_vec(),
        })
        .collect();
    let results = ctx.scram_credentials.alter(deletions, upsertions).await;
    for (user, result) in &results {
        if result.is_ok() {
            log::info!("{} altered the SCRAM credentials of {user}", session.principal);
        }
    }
    AlterUserScramCredentialsResponse::default().with_results(
        results
            .into_iter()
            .map(|(user, result)| {
                let answer =
                    AlterUserScramCredentialsResult::default().with_user(StrBytes::from_string(user));
                match result {
                    Ok(()) => answer,
                    Err((code, message)) => answer
                        .with_error_code(code)
                        .with_error_message(Some(StrBytes::from_string(message))),
                }
            })
            .collect(),
    )
}
