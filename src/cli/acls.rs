//! `ferrolog acls`: list, add and remove ACLs, as `kafka-acls
//! --bootstrap-server` does (DescribeAcls, CreateAcls, DeleteAcls).

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use super::connection::{refusal, CliError, Cluster};
use super::{print, table, ConnectionArgs};
use crate::security::acl::{AclOperation, AclPermissionType, PatternType, ResourceType};

/// What `ferrolog acls` does.
#[derive(clap::Subcommand, Debug)]
pub enum AclsAction {
    /// The ACLs (of one resource, or all).
    List {
        /// Which resource (none: every ACL).
        #[command(flatten)]
        resource: ResourceArgs,
    },
    /// Add ACLs: each principal gets each operation on the resource.
    Add {
        /// The ACLs.
        #[command(flatten)]
        acl: AclArgs,
    },
    /// Remove exactly these ACLs.
    Remove {
        /// The ACLs.
        #[command(flatten)]
        acl: AclArgs,
    },
}

/// The resource, as kafka-acls names it.
#[derive(clap::Args, Debug)]
pub struct ResourceArgs {
    /// A topic (`*` for every topic).
    #[arg(long)]
    topic: Option<String>,
    /// A consumer group.
    #[arg(long)]
    group: Option<String>,
    /// A transactional id.
    #[arg(long)]
    transactional_id: Option<String>,
    /// The cluster.
    #[arg(long)]
    cluster: bool,
    /// `literal` (default) or `prefixed`.
    #[arg(long, default_value = "literal")]
    resource_pattern_type: String,
}

impl ResourceArgs {
    /// (type, name), or None when no resource was named.
    fn resource(&self) -> Result<Option<(ResourceType, String)>, CliError> {
        let named: Vec<(ResourceType, String)> = [
            self.topic.clone().map(|t| (ResourceType::Topic, t)),
            self.group.clone().map(|g| (ResourceType::Group, g)),
            self.transactional_id
                .clone()
                .map(|t| (ResourceType::TransactionalId, t)),
            self.cluster
                .then(|| (ResourceType::Cluster, "kafka-cluster".to_string())),
        ]
        .into_iter()
        .flatten()
        .collect();
        match named.len() {
            0 => Ok(None),
            1 => Ok(named.into_iter().next()),
            _ => Err(CliError::Usage(
                "name one of --topic, --group, --transactional-id, --cluster".into(),
            )),
        }
    }

    fn pattern(&self) -> Result<PatternType, CliError> {
        match PatternType::from_name(&self.resource_pattern_type) {
            Some(p @ (PatternType::Literal | PatternType::Prefixed)) => Ok(p),
            _ => Err(CliError::Usage(format!(
                "--resource-pattern-type {}: literal or prefixed",
                self.resource_pattern_type
            ))),
        }
    }
}

/// ACLs to add or remove.
#[derive(clap::Args, Debug)]
pub struct AclArgs {
    /// Which resource.
    #[command(flatten)]
    resource: ResourceArgs,
    /// A principal to allow (`User:alice`; repeatable).
    #[arg(long)]
    allow_principal: Vec<String>,
    /// A principal to deny (repeatable).
    #[arg(long)]
    deny_principal: Vec<String>,
    /// An operation (Read, Write, Create, Describe, All...; repeatable).
    #[arg(long, required = true)]
    operation: Vec<String>,
    /// The host the ACL applies from.
    #[arg(long, default_value = "*")]
    host: String,
}

#[derive(Serialize)]
struct AclView {
    resource_type: String,
    resource_name: String,
    pattern_type: String,
    principal: String,
    host: String,
    operation: String,
    permission: String,
}

/// Each (principal, permission, operation) the arguments name.
#[allow(clippy::type_complexity)]
fn entries(
    acl: &AclArgs,
) -> Result<
    (
        ResourceType,
        String,
        PatternType,
        Vec<(String, AclPermissionType, AclOperation)>,
    ),
    CliError,
> {
    let Some((resource_type, name)) = acl.resource.resource()? else {
        return Err(CliError::Usage(
            "name the resource: --topic, --group, --transactional-id or --cluster".into(),
        ));
    };
    let pattern = acl.resource.pattern()?;
    let principals = acl
        .allow_principal
        .iter()
        .map(|p| (p, AclPermissionType::Allow))
        .chain(
            acl.deny_principal
                .iter()
                .map(|p| (p, AclPermissionType::Deny)),
        );
    let mut entries = Vec::new();
    for (principal, permission) in principals {
        if !principal.contains(':') {
            return Err(CliError::Usage(format!(
                "{principal}: principals are Type:name"
            )));
        }
        for operation in &acl.operation {
            let op = AclOperation::from_name(operation)
                .filter(|o| !matches!(o, AclOperation::Unknown | AclOperation::Any))
                .ok_or_else(|| {
                    CliError::Usage(format!("--operation {operation}: not an ACL operation"))
                })?;
            entries.push((principal.clone(), permission, op));
        }
    }
    if entries.is_empty() {
        return Err(CliError::Usage(
            "--allow-principal or --deny-principal is needed".into(),
        ));
    }
    Ok((resource_type, name, pattern, entries))
}

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

pub async fn run(action: AclsAction, args: &ConnectionArgs) -> Result<(), CliError> {
    let (cluster, metadata) = Cluster::connect(args).await?;
    match action {
        AclsAction::List { resource } => {
            let named = resource.resource()?;
            let request = DescribeAclsRequest::default()
                .with_resource_type_filter(named.as_ref().map_or(ResourceType::Any, |r| r.0).code())
                .with_resource_name_filter(named.as_ref().map(|r| text(&r.1)))
                .with_pattern_type_filter(if named.is_some() {
                    resource.pattern()?.code()
                } else {
                    PatternType::Any.code()
                })
                .with_principal_filter(None)
                .with_host_filter(None)
                .with_operation(AclOperation::Any.code())
                .with_permission_type(AclPermissionType::Any.code());
            let response: DescribeAclsResponse = cluster
                .ask_any(&metadata, ApiKey::DescribeAcls, 3, &request)
                .await?;
            if response.error_code != 0 {
                return Err(refusal(
                    "describing the ACLs",
                    response.error_code,
                    response.error_message.as_deref(),
                ));
            }
            let name = |code: i8, f: fn(i8) -> Option<&'static str>| {
                f(code).unwrap_or("Unknown").to_string()
            };
            let mut acls: Vec<AclView> = response
                .resources
                .iter()
                .flat_map(|r| {
                    r.acls.iter().map(move |a| AclView {
                        resource_type: name(r.resource_type, |c| {
                            ResourceType::from_code(c).map(ResourceType::name)
                        }),
                        resource_name: r.resource_name.to_string(),
                        pattern_type: name(r.pattern_type, |c| {
                            PatternType::from_code(c).map(PatternType::name)
                        }),
                        principal: a.principal.to_string(),
                        host: a.host.to_string(),
                        operation: name(a.operation, |c| {
                            AclOperation::from_code(c).map(AclOperation::name)
                        }),
                        permission: name(a.permission_type, |c| {
                            AclPermissionType::from_code(c).map(AclPermissionType::name)
                        }),
                    })
                })
                .collect();
            acls.sort_by(|a, b| {
                (
                    &a.resource_type,
                    &a.resource_name,
                    &a.principal,
                    &a.operation,
                )
                    .cmp(&(
                        &b.resource_type,
                        &b.resource_name,
                        &b.principal,
                        &b.operation,
                    ))
            });
            print(args.json, &acls, || {
                let rows = acls
                    .iter()
                    .map(|a| {
                        vec![
                            format!("{}:{}:{}", a.resource_type, a.pattern_type, a.resource_name),
                            a.principal.clone(),
                            a.host.clone(),
                            a.operation.clone(),
                            a.permission.clone(),
                        ]
                    })
                    .collect();
                table(
                    &["RESOURCE", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"],
                    rows,
                )
            });
            Ok(())
        }
        AclsAction::Add { acl } => {
            let (resource_type, name, pattern, entries) = entries(&acl)?;
            let request = CreateAclsRequest::default().with_creations(
                entries
                    .iter()
                    .map(|(principal, permission, op)| {
                        AclCreation::default()
                            .with_resource_type(resource_type.code())
                            .with_resource_name(text(&name))
                            .with_resource_pattern_type(pattern.code())
                            .with_principal(text(principal))
                            .with_host(text(&acl.host))
                            .with_operation(op.code())
                            .with_permission_type(permission.code())
                    })
                    .collect(),
            );
            let response: CreateAclsResponse = cluster
                .ask_any(&metadata, ApiKey::CreateAcls, 3, &request)
                .await?;
            if let Some(r) = response.results.iter().find(|r| r.error_code != 0) {
                return Err(refusal(
                    "adding ACLs",
                    r.error_code,
                    r.error_message.as_deref(),
                ));
            }
            let done = serde_json::json!({ "added": entries.len() });
            print(args.json, &done, || {
                format!("Added {} ACLs on {name}.", entries.len())
            });
            Ok(())
        }
        AclsAction::Remove { acl } => {
            let (resource_type, name, pattern, entries) = entries(&acl)?;
            let request = DeleteAclsRequest::default().with_filters(
                entries
                    .iter()
                    .map(|(principal, permission, op)| {
                        DeleteAclsFilter::default()
                            .with_resource_type_filter(resource_type.code())
                            .with_resource_name_filter(Some(text(&name)))
                            .with_pattern_type_filter(pattern.code())
                            .with_principal_filter(Some(text(principal)))
                            .with_host_filter(Some(text(&acl.host)))
                            .with_operation(op.code())
                            .with_permission_type(permission.code())
                    })
                    .collect(),
            );
            let response: DeleteAclsResponse = cluster
                .ask_any(&metadata, ApiKey::DeleteAcls, 3, &request)
                .await?;
            if let Some(r) = response.filter_results.iter().find(|r| r.error_code != 0) {
                return Err(refusal(
                    "removing ACLs",
                    r.error_code,
                    r.error_message.as_deref(),
                ));
            }
            let removed: usize = response
                .filter_results
                .iter()
                .map(|r| r.matching_acls.len())
                .sum();
            let done = serde_json::json!({ "removed": removed });
            print(args.json, &done, || {
                format!("Removed {removed} ACLs on {name}.")
            });
            Ok(())
        }
    }
}
