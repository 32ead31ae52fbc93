//! Writing elections: each partition's next state is decided by
//! `controller::election` on the state read fresh, and written
//! conditionally on its version (and on the controller epoch).

use super::*;

/// Partition-state writes in flight at once for one topic.
const STATE_WRITES_IN_FLIGHT: usize = 128;

impl Shared {
    /// Rewrites the partitions of `topic` that `pick` selects, all at once
    /// (Kafka pipelines its partition-state writes; one after another, a
    /// topic's hundred writes kept its leaders waiting on a broker that
    /// had stopped). `rewrite` writes one partition and answers its new
    /// metadata, or `None` when nothing changed. Updates `topic` and
    /// answers the partitions that changed, in order; the first error
    /// wins, after every write in flight has ended.
    pub(super) async fn rewrite_partitions<F, Fut>(
        &self,
        topic: &mut TopicMetadata,
        pick: impl Fn(i32, &PartitionMetadata) -> bool,
        rewrite: F,
    ) -> Result<Vec<i32>, ControllerError>
    where
        F: Fn(TopicPartition, PartitionMetadata) -> Fut,
        Fut: std::future::Future<Output = Result<Option<PartitionMetadata>, ControllerError>>,
    {
        use futures_util::StreamExt;
        let picked: Vec<(i32, PartitionMetadata)> = topic
            .partitions
            .iter()
            .filter(|(&index, p)| pick(index, p))
            .map(|(&index, p)| (index, p.clone()))
            .collect();
        let written: Vec<(i32, Result<Option<PartitionMetadata>, ControllerError>)> =
            futures_util::stream::iter(picked)
                .map(|(index, p)| {
                    let outcome = rewrite(TopicPartition::new(topic.name.clone(), index), p);
                    async move { (index, outcome.await) }
                })
                .buffered(STATE_WRITES_IN_FLIGHT)
                .collect()
                .await;
        let mut changed = Vec::new();
        let mut failed = None;
        for (index, outcome) in written {
            match outcome {
                Ok(Some(updated)) => {
                    topic.partitions.insert(index, updated);
                    changed.push(index);
                }
                Ok(None) => {}
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(changed),
        }
    }

    /// Kafka's election rules for one partition after brokers come or go
    /// (only the active controller calls it):
    /// `controller::election::offline_partition_leader_election`, with
    /// the brokers shutting down excluded and an unclean or offline
    /// outcome logged. `None`: nothing changes.
    pub(super) fn elect(
        &self,
        tp: &TopicPartition,
        state: &LeaderAndIsr,
        replicas: &[i32],
        live: &[i32],
        unclean: bool,
    ) -> Option<LeaderAndIsr> {
        let elected = offline_partition_leader_election(
            state,
            replicas,
            live,
            &self.shutting_down(),
            unclean,
            self.controller_epoch(),
        )?;
        if let Elected::Unclean(next) = &elected {
            log::warn!(
                "partition {tp}: unclean election of broker {}, not in the ISR {:?}: records \
                 that ISR acknowledged may be lost",
                next.leader,
                state.isr,
            );
        }
        Some(elected.into_state())
    }

    /// Re-reads `tp`'s state and applies [`Shared::elect`]. Returns the
    /// state in force and its version.
    pub(super) async fn reelect(
        &self,
        tp: &TopicPartition,
        replicas: &[i32],
        live: &[i32],
        unclean: bool,
    ) -> Result<Option<(LeaderAndIsr, i32)>, ControllerError> {
        // Timed for ControllerStats when an election decided a new state.
        let started = std::time::Instant::now();
        let decided = std::cell::Cell::new(false);
        let elected = self
            .rewrite_state(tp, |state| {
                let next = self.elect(tp, state, replicas, live, unclean);
                decided.set(decided.get() || next.is_some());
                next
            })
            .await;
        if decided.get() && elected.is_ok() {
            let metrics = &self.partitions.replica.metrics;
            metrics.leader_elections.record(started.elapsed());
        }
        elected
    }

    /// Re-reads `tp`'s state, asks `decide` for the next one (`None`:
    /// keep it) and writes it conditionally on the version read (a leader
    /// may be changing the ISR at the same moment: then read again).
    /// Returns the state in force and its version.
    pub(super) async fn rewrite_state(
        &self,
        tp: &TopicPartition,
        decide: impl Fn(&LeaderAndIsr) -> Option<LeaderAndIsr>,
    ) -> Result<Option<(LeaderAndIsr, i32)>, ControllerError> {
        let path = TopicPartitionStateZNode::path(tp);
        for _ in 0..ELECTION_ATTEMPTS {
            let Some((bytes, stat)) = self.store.get(&path).await? else {
                return Ok(None);
            };
            let state = TopicPartitionStateZNode::decode(tp, &bytes)?;
            if !self.is_active() {
                return Ok(Some((state, stat.version)));
            }
            let Some(elected) = decide(&state) else {
                return Ok(Some((state, stat.version)));
            };
            let write = StoreOp::Set {
                path: path.clone(),
                data: TopicPartitionStateZNode::encode(&elected),
                expected_version: Some(stat.version),
            };
            match self.controller_write(vec![write]).await {
                Ok(stats) => {
                    let written = stats.first().copied().unwrap_or(Stat {
                        version: stat.version + 1,
                        creation_zxid: 0,
                        ephemeral_owner: 0,
                    });
                    if elected.leader == LeaderAndIsr::NO_LEADER {
                        log::warn!(
                            "partition {tp} is offline: no in-sync replica of {:?} is live",
                            elected.isr
                        );
                    } else {
                        log::info!(
                            "partition {tp}: leader {} (leader epoch {}), ISR {:?}",
                            elected.leader,
                            elected.leader_epoch,
                            elected.isr
                        );
                    }
                    return Ok(Some((elected, written.version)));
                }
                Err(ControllerError::Store(MetadataError::BadVersion { .. })) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(ControllerError::Store(MetadataError::BadVersion {
            path,
            expected: -1,
            actual: -1,
        }))
    }

    /// [`Shared::reelect`] for every partition whose leader or an ISR
    /// member is not in `live`; applies the results here and answers the
    /// topics that changed (not yet sent to the other brokers).
    pub(super) async fn reelect_all(
        &self,
        live: &[i32],
    ) -> Result<Vec<TopicMetadata>, ControllerError> {
        let topics = self.all_topics();
        let mut changed = Vec::new();
        for mut topic in topics {
            let unclean = self.unclean_allowed(&topic.config);
            let affected = |_: i32, p: &PartitionMetadata| {
                !live.contains(&p.leader) || p.isr.iter().any(|b| !live.contains(b))
            };
            let moved = self
                .rewrite_partitions(&mut topic, affected, |tp, p| async move {
                    let Some((state, version)) =
                        self.reelect(&tp, &p.replicas, live, unclean).await?
                    else {
                        return Ok(None);
                    };
                    let updated = partition_metadata(&state, &p.replicas, version);
                    Ok((updated != p).then_some(updated))
                })
                .await?;
            self.take_up_moves(topic, &moved, &mut changed).await?;
        }
        Ok(changed)
    }

    /// `broker` leaves `tp` (a controlled shutdown, a failed log dir):
    /// `controller::election::leave_partition` on the state read fresh,
    /// written conditionally. Answers the new metadata, `None` when
    /// nothing changed.
    pub(super) async fn leave(
        &self,
        tp: &TopicPartition,
        broker: i32,
        p: &PartitionMetadata,
        eligible: impl Fn(i32) -> bool,
    ) -> Result<Option<PartitionMetadata>, ControllerError> {
        let replicas = p.replicas.clone();
        let epoch = self.controller_epoch();
        let Some((state, version)) = self
            .rewrite_state(tp, |state| {
                crate::controller::election::leave_partition(
                    state, broker, &replicas, &eligible, epoch,
                )
            })
            .await?
        else {
            return Ok(None);
        };
        let updated = partition_metadata(&state, &replicas, version);
        Ok((updated != *p).then_some(updated))
    }

    /// Puts `topic`, whose partitions `moved` changed, in the context, applies
    /// them to this broker's replicas and adds those partitions to
    /// `changed` (nothing when none moved).
    pub(super) async fn take_up_moves(
        &self,
        topic: TopicMetadata,
        moved: &[i32],
        changed: &mut Vec<TopicMetadata>,
    ) -> Result<(), ControllerError> {
        if moved.is_empty() {
            return Ok(());
        }
        self.remember(topic.clone());
        self.become_leader_or_follower(&topic, moved).await?;
        // The other brokers are told of the partitions that moved only.
        changed.push(topic.only(moved));
        Ok(())
    }
}
