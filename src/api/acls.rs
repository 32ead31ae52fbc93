//! CreateAcls (key 30), DeleteAcls (key 31) and DescribeAcls (key 29),
//! v0-3, against the `AclAuthorizer`. As in Kafka's `AclApis`: creating
//! and deleting need ALTER on the cluster, describing DESCRIBE
//! (CLUSTER_AUTHORIZATION_FAILED otherwise); without an authorizer every
//! one answers SECURITY_DISABLED. v0 has no pattern type: it means
//! LITERAL.

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::BrokerContext;
use crate::security::acl::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
    EntryFilter, PatternType, ResourcePattern, ResourcePatternFilter, ResourceType,
};
use crate::security::Session;

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// The security-disabled or cluster-authorization error, if any.
fn refused(ctx: &BrokerContext, session: &Session, operation: AclOperation) -> Option<i16> {
    if ctx.authorizer.is_none() {
        return Some(ResponseError::SecurityDisabled.code());
    }
    (!ctx.authorize_cluster(session, operation))
        .then(|| ResponseError::ClusterAuthorizationFailed.code())
}

/// Codes Kafka does not know decode as `Unknown`, which validation refuses.
fn resource_type(code: i8) -> ResourceType {
    ResourceType::from_code(code).unwrap_or(ResourceType::Unknown)
}
fn pattern_type(code: i8) -> PatternType {
    PatternType::from_code(code).unwrap_or(PatternType::Unknown)
}
fn operation(code: i8) -> AclOperation {
    AclOperation::from_code(code).unwrap_or(AclOperation::Unknown)
}
fn permission(code: i8) -> AclPermissionType {
    AclPermissionType::from_code(code).unwrap_or(AclPermissionType::Unknown)
}

pub async fn create(
    ctx: &BrokerContext,
    session: &Session,
    request: CreateAclsRequest,
) -> CreateAclsResponse {
    let failed = |code: i16, message: Option<String>| {
        AclCreationResult::default()
            .with_error_code(code)
            .with_error_message(message.map(StrBytes::from_string))
    };
    let (Some(authorizer), None) = (
        ctx.authorizer.as_ref(),
        refused(ctx, session, AclOperation::Alter),
    ) else {
        let code = refused(ctx, session, AclOperation::Alter)
            .unwrap_or(ResponseError::SecurityDisabled.code());
        return CreateAclsResponse::default()
            .with_results(request.creations.iter().map(|_| failed(code, None)).collect());
    };
    let bindings: Vec<AclBinding> = request
        .creations
        .iter()
        .map(|c| AclBinding {
            pattern: ResourcePattern {
                resource_type: resource_type(c.resource_type),
                pattern_type: pattern_type(c.resource_pattern_type),
                name: c.resource_name.to_string(),
            },
            entry: AccessControlEntry {
                principal: c.principal.to_string(),
                host: c.host.to_string(),
                operation: operation(c.operation),
                permission: permission(c.permission_type),
            },
        })
        .collect();
    for binding in &bindings {
        log::info!(
            "{} creates ACL {} {} {} from {} on {}",
            session.principal,
            binding.entry.permission,
            binding.entry.principal,
            binding.entry.operation,
            binding.entry.host,
            binding.pattern
        );
    }
    let results = authorizer
        .create(bindings)
        .await
        .into_iter()
        .map(|result| match result {
            Ok(()) => AclCreationResult::default(),
            Err(e) => failed(e.code(), Some(e.to_string())),
        })
        .collect();
    CreateAclsResponse::default().with_results(results)
}

/// The filter a DescribeAcls request or a DeleteAcls filter carries (two
/// wire types with the same fields).
macro_rules! filter_of {
    ($wire:expr) => {
        AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: resource_type($wire.resource_type_filter),
                name: $wire.resource_name_filter.as_ref().map(|n| n.to_string()),
                pattern_type: pattern_type($wire.pattern_type_filter),
            },
            entry: EntryFilter {
                principal: $wire.principal_filter.as_ref().map(|p| p.to_string()),
                host: $wire.host_filter.as_ref().map(|h| h.to_string()),
                operation: operation($wire.operation),
                permission: permission($wire.permission_type),
            },
        }
    };
}

/// A filter with an element Kafka does not know matches nothing; Kafka
/// refuses it with INVALID_REQUEST.
fn unknown_elements(filter: &AclBindingFilter) -> bool {
    filter.pattern.resource_type == ResourceType::Unknown
        || filter.pattern.pattern_type == PatternType::Unknown
        || filter.entry.operation == AclOperation::Unknown
        || filter.entry.permission == AclPermissionType::Unknown
}

pub fn describe(
    ctx: &BrokerContext,
    session: &Session,
    request: DescribeAclsRequest,
) -> DescribeAclsResponse {
    if let Some(code) = refused(ctx, session, AclOperation::Describe) {
        return DescribeAclsResponse::default().with_error_code(code);
    }
    let Some(authorizer) = ctx.authorizer.as_ref() else {
        return DescribeAclsResponse::default()
            .with_error_code(ResponseError::SecurityDisabled.code());
    };
    let wanted = filter_of!(request);
    if unknown_elements(&wanted) {
        return DescribeAclsResponse::default()
            .with_error_code(ResponseError::InvalidRequest.code())
            .with_error_message(Some(text("The filter contains unknown elements")));
    }
    let mut by_pattern: BTreeMap<ResourcePattern, Vec<AclDescription>> = BTreeMap::new();
    for binding in authorizer.describe(&wanted) {
        by_pattern.entry(binding.pattern).or_default().push(
            AclDescription::default()
                .with_principal(text(&binding.entry.principal))
                .with_host(text(&binding.entry.host))
                .with_operation(binding.entry.operation.code())
                .with_permission_type(binding.entry.permission.code()),
        );
    }
    DescribeAclsResponse::default().with_resources(
        by_pattern
            .into_iter()
            .map(|(pattern, acls)| {
                DescribeAclsResource::default()
                    .with_resource_type(pattern.resource_type.code())
                    .with_resource_name(text(&pattern.name))
                    .with_pattern_type(pattern.pattern_type.code())
                    .with_acls(acls)
            })
            .collect(),
    )
}

pub async fn delete(
    ctx: &BrokerContext,
    session: &Session,
    request: DeleteAclsRequest,
) -> DeleteAclsResponse {
    let failed = |code: i16, message: Option<&str>| {
        DeleteAclsFilterResult::default()
            .with_error_code(code)
            .with_error_message(message.map(text))
    };
    let (Some(authorizer), None) = (
        ctx.authorizer.as_ref(),
        refused(ctx, session, AclOperation::Alter),
    ) else {
        let code = refused(ctx, session, AclOperation::Alter)
            .unwrap_or(ResponseError::SecurityDisabled.code());
        return DeleteAclsResponse::default().with_filter_results(
            request.filters.iter().map(|_| failed(code, None)).collect(),
        );
    };
    let filters: Vec<AclBindingFilter> = request
        .filters
        .iter()
        .map(|f: &DeleteAclsFilter| filter_of!(f))
        .collect();
    // Filters with unknown elements match nothing and answer an error.
    let valid: Vec<AclBindingFilter> = filters
        .iter()
        .map(|f| {
            let mut f = f.clone();
            if unknown_elements(&f) {
                f.pattern.resource_type = ResourceType::Unknown;
            }
            f
        })
        .collect();
    let deleted = authorizer.delete(&valid).await;
    let results = filters
        .iter()
        .zip(deleted)
        .map(|(f, deleted)| {
            if unknown_elements(f) {
                return failed(
                    ResponseError::InvalidRequest.code(),
                    Some("The filter contains unknown elements"),
                );
            }
            DeleteAclsFilterResult::default().with_matching_acls(
                deleted
                    .into_iter()
                    .map(|(binding, result)| {
                        log::info!(
                            "{} deletes ACL {} {} {} from {} on {}",
                            session.principal,
                            binding.entry.permission,
                            binding.entry.principal,
                            binding.entry.operation,
                            binding.entry.host,
                            binding.pattern
                        );
                        let matching = DeleteAclsMatchingAcl::default()
                            .with_resource_type(binding.pattern.resource_type.code())
                            .with_resource_name(text(&binding.pattern.name))
                            .with_pattern_type(binding.pattern.pattern_type.code())
                            .with_principal(text(&binding.entry.principal))
                            .with_host(text(&binding.entry.host))
                            .with_operation(binding.entry.operation.code())
                            .with_permission_type(binding.entry.permission.code());
                        match result {
                            Ok(()) => matching,
                            Err(e) => matching
                                .with_error_code(e.code())
                                .with_error_message(Some(StrBytes::from_string(e.to_string()))),
                        }
                    })
                    .collect(),
            )
        })
        .collect();
    DeleteAclsResponse::default().with_filter_results(results)
}
