//! What a request handler may reach: the broker's config, its actors and
//! the shared state they read. Built once by `BrokerBuilder::start` and
//! shared by every connection; outside `src/api` only the network actors
//! and the broker hold it.

use actix::Addr;

use crate::actors::controller::Controller;
use crate::actors::group_coordinator::GroupCoordinator;
use crate::actors::partition::{PartitionHandle, PartitionRegistry};
use crate::cluster::MetadataCache;
use crate::config::BrokerConfig;
use crate::security::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::security::Session;
use crate::topic_partition::TopicPartition;

/// Everything a request handler may reach.
pub struct BrokerContext {
    /// `server.properties` as the broker started with it.
    pub config: BrokerConfig,
    /// The config in force now: the file with the dynamic broker configs
    /// (KIP-226) over it. Keys that can change are read from here.
    pub dynamic: crate::config::dynamic::DynamicBrokerConfig,
    pub broker_id: i32,
    pub controller: Addr<Controller>,
    /// This broker's replicas: where the controller's requests go.
    pub replica_manager: Addr<crate::actors::replica_manager::ReplicaManager>,
    pub groups: Addr<GroupCoordinator>,
    pub partitions: PartitionRegistry,
    /// The one append path, shared with extensions.
    pub produce_path: crate::actors::partition::ProducePath,
    pub metadata: MetadataCache,
    pub clock: crate::clock::SharedClock,
    /// The metadata store (ZooKeeper or embedded): OffsetCommit/OffsetFetch
    /// v0 use it directly in ZooKeeper mode.
    pub store: std::sync::Arc<dyn crate::metadata::MetadataStore>,
    /// Producer ids for InitProducerId.
    pub producer_ids: std::sync::Arc<crate::producer_ids::ProducerIdManager>,
    /// `queued.max.request.bytes` as a pool every connection reads request
    /// frames against; `None`: unbounded.
    pub request_memory: Option<std::sync::Arc<tokio::sync::Semaphore>>,
    /// Spare request-frame buffers every connection reads into.
    pub frame_buffers: std::sync::Arc<crate::net::FrameBuffers>,
    /// The log manager's description of its directories (DescribeLogDirs).
    pub log_dirs: actix::Recipient<crate::actors::log_manager::DescribeLogDirs>,
    /// Topics a Produce started auto-creating.
    pub auto_creations: crate::auto_topic_creation::AutoTopicCreations,
    /// `authorizer.class.name`'s authorizer; `None` allows everything, as
    /// Kafka without an authorizer does.
    pub authorizer: Option<std::sync::Arc<crate::security::AclAuthorizer>>,
    /// SCRAM credentials (`/config/users`), for the KIP-554 APIs.
    pub scram_credentials: std::sync::Arc<crate::security::credentials::UserScramCredentials>,
    /// How this broker reaches the others (the inter-broker listener's
    /// TLS and SASL login).
    pub inter_broker: std::sync::Arc<crate::net::inter_broker::InterBrokerSecurity>,
    /// Client quotas (`/config/users`, `/config/clients`): stored for the
    /// KIP-546 APIs, applied to produce and fetch.
    pub client_quotas: std::sync::Arc<crate::quota::ClientQuotas>,
    /// Kafka's BrokerTopicMetrics and RequestMetrics, counted as requests
    /// are answered.
    pub metrics: std::sync::Arc<crate::metrics::BrokerMetrics>,
}

impl BrokerContext {
    /// May `session` do `operation` on the named resource? Always, without
    /// an authorizer.
    pub fn authorize(
        &self,
        session: &Session,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.authorizer
            .as_ref()
            .is_none_or(|a| a.authorize(session, operation, resource_type, name))
    }

    /// `authorize` on the cluster resource.
    pub fn authorize_cluster(&self, session: &Session, operation: AclOperation) -> bool {
        self.authorize(session, operation, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// The KIP-430 bits for a resource: every supported operation without
    /// an authorizer.
    pub fn authorized_operations(
        &self,
        session: &Session,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        match &self.authorizer {
            Some(a) => a.authorized_operations(session, resource_type, name),
            None => resource_type
                .supported_operations()
                .iter()
                .fold(0, |bits, op| bits | 1 << op.code()),
        }
    }

    pub fn partition(&self, tp: &TopicPartition) -> Option<PartitionHandle> {
        self.partitions.get(tp)
    }

    /// The error for a partition this broker does not serve: led elsewhere
    /// (NOT_LEADER_OR_FOLLOWER, so clients refresh their metadata), without
    /// a leader (LEADER_NOT_AVAILABLE), or unknown.
    pub fn missing_partition(&self, tp: &TopicPartition) -> i16 {
        self.produce_path.missing_partition(tp)
    }
}
