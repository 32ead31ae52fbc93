//! `ferrolog cluster`: the brokers, the controller, and the partitions an
//! operator must look at (under-replicated, offline).

use serde::Serialize;

use super::connection::{CliError, Cluster};
use super::{print, table, ConnectionArgs};

#[derive(Serialize)]
struct BrokerView {
    id: i32,
    host: String,
    port: i32,
    rack: Option<String>,
    controller: bool,
}

#[derive(Serialize)]
struct ClusterView {
    cluster_id: Option<String>,
    controller: i32,
    brokers: Vec<BrokerView>,
    topics: usize,
    partitions: usize,
    /// `topic-partition` names.
    under_replicated: Vec<String>,
    offline: Vec<String>,
}

pub async fn run(args: &ConnectionArgs) -> Result<(), CliError> {
    let (_, metadata) = Cluster::connect(args).await?;
    let mut brokers: Vec<BrokerView> = metadata
        .brokers
        .iter()
        .map(|b| BrokerView {
            id: b.node_id.0,
            host: b.host.to_string(),
            port: b.port,
            rack: b.rack.as_ref().map(|r| r.to_string()),
            controller: b.node_id == metadata.controller_id,
        })
        .collect();
    brokers.sort_by_key(|b| b.id);
    let mut under_replicated = Vec::new();
    let mut offline = Vec::new();
    let mut partitions = 0;
    for topic in &metadata.topics {
        let name = topic
            .name
            .as_ref()
            .map(|n| n.0.to_string())
            .unwrap_or_default();
        for p in &topic.partitions {
            partitions += 1;
            let tp = format!("{name}-{}", p.partition_index);
            if p.leader_id.0 < 0 {
                offline.push(tp);
            } else if p.isr_nodes.len() < p.replica_nodes.len() {
                under_replicated.push(tp);
            }
        }
    }
    under_replicated.sort();
    offline.sort();
    let view = ClusterView {
        cluster_id: metadata.cluster_id.as_ref().map(|c| c.to_string()),
        controller: metadata.controller_id.0,
        brokers,
        topics: metadata.topics.len(),
        partitions,
        under_replicated,
        offline,
    };
    print(args.json, &view, || {
        let rows = view
            .brokers
            .iter()
            .map(|b| {
                vec![
                    b.id.to_string(),
                    format!("{}:{}", b.host, b.port),
                    b.rack.clone().unwrap_or_default(),
                    if b.controller { "yes" } else { "" }.to_string(),
                ]
            })
            .collect();
        format!(
            "cluster {}: {} topics, {} partitions, {} under-replicated, {} offline\n{}{}{}",
            view.cluster_id.as_deref().unwrap_or("?"),
            view.topics,
            view.partitions,
            view.under_replicated.len(),
            view.offline.len(),
            table(&["BROKER", "ADDRESS", "RACK", "CONTROLLER"], rows),
            listed("under-replicated", &view.under_replicated),
            listed("offline", &view.offline),
        )
    });
    // Something to look at is not a failure of the tool: exit 0.
    Ok(())
}

fn listed(what: &str, partitions: &[String]) -> String {
    if partitions.is_empty() {
        String::new()
    } else {
        format!("\n{what}: {}", partitions.join(" "))
    }
}
