//! The ACL change listener (Kafka's `ZkNodeChangeNotificationListener`
//! for `/kafka-acl-changes` and `/kafka-acl-extended-changes`): it watches
//! both notification paths and hands each new set of children to the
//! authorizer, which re-reads the patterns they name. It owns no ACLs and
//! never writes to the store. Runs under `supervise`; a restart watches
//! again and re-reads the children, so no change is missed.

use std::sync::Arc;

use actix::prelude::*;

use super::supervisor::{supervise, BrokerFatal, ChildSpec, Escalation, SupervisorLink};
use crate::metadata::store::MetadataStore;
use crate::metadata::znodes::AclChangeNotification;
use crate::security::AclAuthorizer;

/// How long a failed watch or read waits before the next try.
const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

pub struct AclChangeListener {
    authorizer: Arc<AclAuthorizer>,
    store: Arc<dyn MetadataStore>,
}

impl AclChangeListener {
    pub fn start(
        authorizer: Arc<AclAuthorizer>,
        store: Arc<dyn MetadataStore>,
        fatal: BrokerFatal,
    ) -> Addr<AclChangeListener> {
        let listener = AclChangeListener { authorizer, store };
        supervise(
            None,
            ChildSpec::new("the ACL change listener", Escalation::ShutdownBroker(fatal)),
            SupervisorLink::default(),
            move |_| listener,
        )
    }

    /// Watch, then read, so no notification between the two is missed;
    /// a watch a session expiry dropped re-arms the same way.
    fn follow(&self, ctx: &mut Context<Self>, path: &'static str) {
        let store = self.store.clone();
        let authorizer = self.authorizer.clone();
        ctx.spawn(
            async move {
                loop {
                    let fired = match store.watch(path).await {
                        Ok(fired) => Some(fired),
                        Err(e) => {
                            log::warn!("cannot watch {path}: {e}");
                            None
                        }
                    };
                    let handled = match store.children(path).await {
                        Ok(children) => match authorizer.process_changes(path, &children).await {
                            Ok(()) => true,
                            Err(e) => {
                                log::warn!("cannot apply the ACL changes under {path}: {e}");
                                false
                            }
                        },
                        Err(e) => {
                            log::warn!("cannot read {path}: {e}");
                            false
                        }
                    };
                    match fired {
                        // Unhandled notifications are read again soon,
                        // whether or not another one arrives.
                        Some(fired) if handled => {
                            let _ = fired.await;
                        }
                        _ => tokio::time::sleep(RETRY).await,
                    }
                }
            }
            .into_actor(self),
        );
    }
}

impl actix::Supervised for AclChangeListener {}

impl Actor for AclChangeListener {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.follow(ctx, AclChangeNotification::LITERAL_PATH);
        self.follow(ctx, AclChangeNotification::EXTENDED_PATH);
    }
}
