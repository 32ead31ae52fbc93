//! An entity's `/config/<type>/<name>` znode read and changed as Kafka's
//! `AdminZkClient.changeConfigs` does: a conditional write (retried when
//! another writer got there first), then a `/config/changes` notification
//! so every broker rereads it. Shared by SCRAM credentials and client
//! quotas, which live in the same user znodes.

use std::collections::BTreeMap;

use super::store::{CreateMode, MetadataError, MetadataStore};
use super::znodes::{
    ConfigChangeNotification, ConfigEntityChangeNotificationZNode, ConfigEntityZNode, ConfigType,
};

/// Attempts of a conditional update before giving up.
const UPDATE_ATTEMPTS: usize = 10;

/// The entity's config and its znode version (`None`: no znode).
pub async fn read(
    store: &dyn MetadataStore,
    config_type: ConfigType,
    name: &str,
) -> Result<(BTreeMap<String, String>, Option<i32>), MetadataError> {
    match store.get(&ConfigEntityZNode::path(config_type, name)).await? {
        Some((bytes, stat)) => Ok((
            ConfigEntityZNode::decode(config_type, name, &bytes)?,
            Some(stat.version),
        )),
        None => Ok((BTreeMap::new(), None)),
    }
}

/// Why an update did not happen.
#[derive(Debug)]
pub enum UpdateError<E> {
    /// `change` refused the current config.
    Refused(E),
    /// The store failed, or the znode kept changing under us.
    Store(MetadataError),
}

/// Applies `change` to the current config and writes it with a change
/// notification; `change` returning `Ok(false)` stops without writing
/// (a validate-only request).
pub async fn update<E>(
    store: &dyn MetadataStore,
    config_type: ConfigType,
    name: &str,
    mut change: impl FnMut(&mut BTreeMap<String, String>) -> Result<bool, E>,
) -> Result<(), UpdateError<E>> {
    let path = ConfigEntityZNode::path(config_type, name);
    let mut last = MetadataError::NodeExists(path.clone());
    for _ in 0..UPDATE_ATTEMPTS {
        let (mut config, version) = read(store, config_type, name)
            .await
            .map_err(UpdateError::Store)?;
        if !change(&mut config).map_err(UpdateError::Refused)? {
            return Ok(());
        }
        let data = ConfigEntityZNode::encode(&config);
        let written = match version {
            Some(version) => store.set(&path, data, Some(version)).await.map(|_| ()),
            None => {
                store
                    .create_recursive(&path, data, CreateMode::Persistent)
                    .await
            }
        };
        match written {
            Ok(()) => {
                store
                    .create_sequential(
                        &format!("{}/config_change_", ConfigEntityChangeNotificationZNode::PATH),
                        ConfigChangeNotification::encode(config_type, name),
                    )
                    .await
                    .map_err(UpdateError::Store)?;
                return Ok(());
            }
            Err(e @ (MetadataError::BadVersion { .. } | MetadataError::NodeExists(_))) => last = e,
            Err(e) => return Err(UpdateError::Store(e)),
        }
    }
    Err(UpdateError::Store(last))
}
