//! The fence every control request passes on a broker: which controller
//! it obeys (Kafka's ReplicaManager keeps `controllerEpoch` for this, and
//! KIP-380 adds the broker epoch). Pure; `actors/replica_manager.rs`
//! applies it and confirms a newer controller with `/controller_epoch`.

use kafka_protocol::error::ResponseError;

/// The controller epochs this broker knows: the fence every control
/// request passes (Kafka's STALE_CONTROLLER_EPOCH and KIP-380's
/// STALE_BROKER_EPOCH).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerEpochs {
    /// This broker's id.
    pub broker_id: i32,
    /// The newest controller epoch seen, in a request or in this broker's
    /// own election. Requests from older controllers are refused.
    pub newest: i32,
    /// This broker's registration epoch (the czxid of its
    /// `/brokers/ids/<id>`); requests addressed to an older registration
    /// are refused.
    pub broker_epoch: i64,
    /// This broker's own controller epoch while it is the active controller.
    pub local_active: Option<i32>,
    /// Whether another broker can be the controller at all (ZooKeeper; the
    /// embedded store has one broker).
    pub clustered: bool,
}

/// What the fence says of a control request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fence {
    Accept,
    /// Refused with this Kafka error code.
    Refuse(i16),
    /// A newer epoch from another broker while this broker believes it is
    /// the controller: taken only once `/controller_epoch` confirms it (a
    /// forged or confused request must not depose a working controller).
    ConfirmNewer,
}

impl ControllerEpochs {
    pub fn new(broker_id: i32, clustered: bool) -> ControllerEpochs {
        ControllerEpochs {
            broker_id,
            newest: 0,
            broker_epoch: -1,
            local_active: None,
            clustered,
        }
    }

    /// The fence for a request from `controller_id` at `epoch`, addressed
    /// to `broker_epoch` (-1: any, as old request versions and this
    /// broker's own controller send).
    pub fn check(&self, controller_id: i32, epoch: i32, broker_epoch: i64) -> Fence {
        let stale = ResponseError::StaleControllerEpoch.code();
        if epoch < self.newest {
            return Fence::Refuse(stale);
        }
        if broker_epoch != -1 && broker_epoch < self.broker_epoch {
            return Fence::Refuse(ResponseError::StaleBrokerEpoch.code());
        }
        match self.local_active {
            Some(local) if controller_id == self.broker_id && epoch == local => Fence::Accept,
            // No other controller of this epoch or older can exist while
            // this broker holds it, and none at all without ZooKeeper.
            Some(local) if epoch <= local || !self.clustered => Fence::Refuse(stale),
            Some(_) => Fence::ConfirmNewer,
            None => Fence::Accept,
        }
    }

    /// Takes `epoch` from `controller_id` as current. Returns this broker's
    /// own controller epoch when the request deposes it.
    pub fn accept(&mut self, controller_id: i32, epoch: i32) -> Option<i32> {
        self.newest = self.newest.max(epoch);
        match self.local_active {
            Some(local) if controller_id != self.broker_id || epoch != local => {
                self.local_active = None;
                Some(local)
            }
            _ => None,
        }
    }

    /// This broker's controller took up the role at `epoch`, or left it.
    pub fn set_local(&mut self, active_epoch: Option<i32>) {
        if let Some(epoch) = active_epoch {
            self.newest = self.newest.max(epoch);
        }
        self.local_active = active_epoch;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STALE: i16 = 11;
    const STALE_BROKER: i16 = 77;

    fn standby() -> ControllerEpochs {
        let mut epochs = ControllerEpochs::new(1, true);
        epochs.broker_epoch = 100;
        epochs
    }

    #[test]
    fn a_standby_takes_the_newest_controller_and_refuses_older_ones() {
        let mut epochs = standby();
        assert_eq!(epochs.check(2, 5, 100), Fence::Accept);
        assert_eq!(epochs.accept(2, 5), None);
        assert_eq!(epochs.check(3, 4, 100), Fence::Refuse(STALE));
        assert_eq!(epochs.check(2, 5, 100), Fence::Accept);
        assert_eq!(epochs.check(3, 6, -1), Fence::Accept);
    }

    #[test]
    fn a_request_for_an_older_registration_is_refused() {
        let epochs = standby();
        assert_eq!(epochs.check(2, 5, 99), Fence::Refuse(STALE_BROKER));
        assert_eq!(epochs.check(2, 5, 101), Fence::Accept);
    }

    #[test]
    fn the_local_controller_passes_its_own_fence_until_a_newer_one_is_confirmed() {
        let mut epochs = standby();
        epochs.set_local(Some(7));
        assert_eq!(epochs.newest, 7);
        assert_eq!(epochs.check(1, 7, -1), Fence::Accept);
        assert_eq!(epochs.accept(1, 7), None);
        // Another broker cannot be controller at this broker's epoch or
        // an older one.
        assert_eq!(epochs.check(2, 7, 100), Fence::Refuse(STALE));
        // A newer one needs `/controller_epoch`'s word.
        assert_eq!(epochs.check(2, 8, 100), Fence::ConfirmNewer);
        assert_eq!(epochs.accept(2, 8), Some(7));
        assert_eq!(epochs.local_active, None);
        // The deposed controller's own decisions are refused from now on.
        assert_eq!(epochs.check(1, 7, -1), Fence::Refuse(STALE));
    }

    #[test]
    fn without_zookeeper_no_other_controller_exists() {
        let mut epochs = ControllerEpochs::new(0, false);
        epochs.set_local(Some(1));
        assert_eq!(epochs.check(5, 9, -1), Fence::Refuse(STALE));
        assert_eq!(epochs.check(0, 1, -1), Fence::Accept);
    }

    #[test]
    fn a_resigned_controller_follows_the_next_one() {
        let mut epochs = standby();
        epochs.set_local(Some(3));
        epochs.set_local(None);
        assert_eq!(epochs.check(2, 4, 100), Fence::Accept);
        assert_eq!(epochs.accept(2, 4), None);
        assert_eq!(epochs.check(1, 3, -1), Fence::Refuse(STALE));
    }
}
