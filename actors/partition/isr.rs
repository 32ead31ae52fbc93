//! A leader's ISR changes: written to the partition state znode
//! conditionally on its version, read back when refused (a write whose
//! reply was lost counts as written), retried when the outcome is unknown,
//! and announced to the controller.

use super::*;

/// How long a leader waits before writing an ISR change again whose
/// outcome it could not learn (the store's connection dropped).
pub(super) const ISR_WRITE_RETRY: Duration = Duration::from_millis(500);

/// Attempts at leaving an ISR change notification for the controller.
pub(super) const NOTIFICATION_ATTEMPTS: usize = 3;

/// What became of a conditional ISR write.
pub(super) enum IsrWrite {
    /// In the store, at this version.
    Written(i32),
    /// Refused: another writer moved the state on.
    Refused(MetadataError),
    /// Not known (the connection dropped; a retry will tell).
    Unknown(MetadataError),
}

/// Writes a leader's `state` to the partition state znode, conditionally on
/// `version`. A refusal is read back: when the znode holds this very state,
/// the write landed and only its reply was lost (the client retried it
/// against the version it had just moved), and it counts as written.
pub(super) async fn write_leader_and_isr(
    store: &dyn MetadataStore,
    tp: &TopicPartition,
    state: &LeaderAndIsr,
    version: i32,
) -> IsrWrite {
    let path = TopicPartitionStateZNode::path(tp);
    let refusal = match store
        .set(
            &path,
            TopicPartitionStateZNode::encode(state),
            Some(version),
        )
        .await
    {
        Ok(stat) => return IsrWrite::Written(stat.version),
        Err(e @ (MetadataError::BadVersion { .. } | MetadataError::NoNode(_))) => e,
        Err(e) => return IsrWrite::Unknown(e),
    };
    match store.get(&path).await {
        Ok(Some((bytes, stat))) => match TopicPartitionStateZNode::decode(tp, &bytes) {
            Ok(read) => {
                let ours = is_own_write(&view(&read), &view(state));
                if ours {
                    log::info!(
                        "partition {tp}: the ISR write at version {version} landed although its \
                         reply was lost (the state is at version {})",
                        stat.version
                    );
                    IsrWrite::Written(stat.version)
                } else {
                    IsrWrite::Refused(refusal)
                }
            }
            Err(_) => IsrWrite::Refused(refusal),
        },
        Ok(None) => IsrWrite::Refused(refusal),
        Err(e) => IsrWrite::Unknown(e),
    }
}

pub(super) fn view(state: &LeaderAndIsr) -> LeaderAndIsrView<'_> {
    LeaderAndIsrView {
        leader: state.leader,
        leader_epoch: state.leader_epoch,
        isr: &state.isr,
        controller_epoch: state.controller_epoch,
    }
}

/// Leaves `/isr_change_notification/isr_change_<n>` for the controller,
/// retried a few times: without it the controller learns of the change only
/// from its next read of the state.
pub(super) async fn notify_isr_change(store: &dyn MetadataStore, tp: &TopicPartition) {
    let notice = IsrChangeNotificationZNode::encode(std::slice::from_ref(tp));
    for attempt in 1..=NOTIFICATION_ATTEMPTS {
        match store
            .create_sequential(IsrChangeNotificationZNode::PREFIX, notice.clone())
            .await
        {
            Ok(_) => return,
            Err(e) if attempt == NOTIFICATION_ATTEMPTS => {
                log::warn!("partition {tp}: the ISR change notification failed: {e}");
            }
            Err(_) => tokio::time::sleep(ISR_WRITE_RETRY).await,
        }
    }
}

impl PartitionActor {
    /// As leader: write `isr` to the partition state znode (conditionally
    /// on its version) and leave a notification for the controller. Until
    /// the write's outcome is known the high watermark counts both ISRs
    /// (`pending_isr`); an outcome that stays unknown (the connection to
    /// the store dropped) is retried.
    pub(super) fn change_isr(
        &mut self,
        isr: std::collections::BTreeSet<i32>,
        ctx: &mut Context<Self>,
    ) {
        if self.replica.store.is_none() {
            return;
        }
        let Role::Leader(leader) = &mut self.role else {
            return;
        };
        if self.isr_fenced || leader.pending_isr.is_some() {
            return;
        }
        leader.pending_isr = Some(isr.clone());
        self.write_isr(isr, ctx);
    }

    pub(super) fn write_isr(
        &mut self,
        isr: std::collections::BTreeSet<i32>,
        ctx: &mut Context<Self>,
    ) {
        let Some(store) = self.replica.store.clone() else {
            return;
        };
        let Role::Leader(leader) = &self.role else {
            return;
        };
        let state = LeaderAndIsr {
            leader: self.replica.broker_id,
            leader_epoch: leader.leader_epoch,
            isr: isr.iter().copied().collect(),
            controller_epoch: self.assignment.controller_epoch,
        };
        let epoch = leader.leader_epoch;
        let version = leader.zk_version;
        let tp = self.tp.clone();
        ctx.spawn(
            async move {
                let outcome = write_leader_and_isr(store.as_ref(), &tp, &state, version).await;
                if matches!(outcome, IsrWrite::Written(_)) {
                    notify_isr_change(store.as_ref(), &tp).await;
                }
                outcome
            }
            .into_actor(self)
            .map(move |outcome, actor, ctx| {
                let Role::Leader(leader) = &mut actor.role else {
                    return;
                };
                if leader.leader_epoch != epoch {
                    return;
                }
                match outcome {
                    IsrWrite::Written(written) => {
                        let before = leader.isr.clone();
                        if leader.complete_isr_write(&isr, Some(written)) {
                            log::info!("partition {}: ISR {before:?} -> {isr:?}", actor.tp);
                            if isr.len() < before.len() {
                                actor.replica.metrics.isr_shrinks.inc();
                            } else if isr.len() > before.len() {
                                actor.replica.metrics.isr_expands.inc();
                            }
                            actor.assignment.isr = isr.iter().copied().collect();
                            actor.assignment.zk_version = written;
                        }
                    }
                    IsrWrite::Refused(e) => {
                        leader.complete_isr_write(&isr, None);
                        // Fenced only while no newer state has arrived since.
                        if leader.zk_version == version {
                            log::warn!(
                                "partition {}: writing ISR {isr:?} was refused ({e}); waiting for \
                                 the controller",
                                actor.tp
                            );
                            actor.isr_fenced = true;
                        }
                    }
                    IsrWrite::Unknown(e) => {
                        log::warn!(
                            "partition {}: the outcome of writing ISR {isr:?} is unknown ({e}); \
                             retrying in {} ms",
                            actor.tp,
                            ISR_WRITE_RETRY.as_millis()
                        );
                        ctx.run_later(ISR_WRITE_RETRY, move |actor, ctx| {
                            let Role::Leader(leader) = &mut actor.role else {
                                return;
                            };
                            if leader.leader_epoch != epoch
                                || leader.pending_isr.as_ref() != Some(&isr)
                            {
                                return;
                            }
                            if leader.zk_version != version {
                                // A LeaderAndIsr brought a newer state: decide again.
                                leader.complete_isr_write(&isr, None);
                                actor.maybe_advance_high_watermark();
                                return;
                            }
                            actor.write_isr(isr, ctx);
                        });
                        return;
                    }
                }
                actor.maybe_advance_high_watermark();
            }),
        );
    }
}
