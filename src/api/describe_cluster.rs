//! DescribeCluster (key 60): brokers, controller and cluster id.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;

use super::authorized_operations::{authorized_operations, Resource};
use super::BrokerContext;

pub fn handle(ctx: &BrokerContext, request: DescribeClusterRequest) -> DescribeClusterResponse {
    let cluster = ctx.metadata.snapshot();
    DescribeClusterResponse::default()
        .with_cluster_id(StrBytes::from_string(cluster.cluster_id.clone()))
        .with_controller_id(BrokerId(cluster.advertised_controller_id()))
        .with_cluster_authorized_operations(authorized_operations(
            Resource::Cluster,
            request.include_cluster_authorized_operations,
        ))
        .with_brokers(
            cluster
                .brokers
                .values()
                .map(|b| {
                    DescribeClusterBroker::default()
                        .with_broker_id(BrokerId(b.id))
                        .with_host(StrBytes::from_string(b.host.clone()))
                        .with_port(b.port as i32)
                        .with_rack(b.rack.clone().map(StrBytes::from_string))
                })
                .collect(),
        )
}
