//! DescribeCluster (key 60): brokers, controller and cluster id, to a
//! principal that may DESCRIBE the cluster (CLUSTER_AUTHORIZATION_FAILED
//! otherwise, as in Kafka).

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;

use kafka_protocol::error::ResponseError;

use super::authorized_operations::authorized_operations;
use super::BrokerContext;
use crate::security::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::security::Session;

pub fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: DescribeClusterRequest,
    listener: &str,
) -> DescribeClusterResponse {
    if !ctx.authorize_cluster(session, AclOperation::Describe) {
        return DescribeClusterResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    let cluster = ctx.metadata.snapshot();
    DescribeClusterResponse::default()
        .with_cluster_id(StrBytes::from_string(cluster.cluster_id.clone()))
        .with_controller_id(BrokerId(cluster.advertised_controller_id()))
        .with_cluster_authorized_operations(authorized_operations(
            ctx,
            session,
            ResourceType::Cluster,
            CLUSTER_NAME,
            request.include_cluster_authorized_operations,
        ))
        .with_brokers(
            cluster
                .brokers
                .values()
                .filter_map(|b| {
                    let (host, port) = b.on_listener(listener)?;
                    Some(
                        DescribeClusterBroker::default()
                            .with_broker_id(BrokerId(b.id))
                            .with_host(StrBytes::from_string(host.to_string()))
                            .with_port(port as i32)
                            .with_rack(b.rack.clone().map(StrBytes::from_string)),
                    )
                })
                .collect(),
        )
}
