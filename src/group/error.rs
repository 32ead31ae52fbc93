//! Why the group state machine refused a request, each one of Kafka's
//! errors; the consumer-group actor answers [`GroupError::code`].

use kafka_protocol::error::ResponseError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// The group is Dead: its coordinator moved or it was deleted.
    #[error("the group's coordinator is not available here")]
    CoordinatorNotAvailable,
    #[error("unknown member id")]
    UnknownMemberId,
    #[error("the generation is not the group's")]
    IllegalGeneration,
    #[error("the group is rebalancing")]
    RebalanceInProgress,
    /// Another member id holds this `group.instance.id`.
    #[error("another member holds this group.instance.id")]
    FencedInstanceId,
    #[error("no such group")]
    GroupIdNotFound,
    #[error("the group still has members")]
    NonEmptyGroup,
    /// The protocol type or name does not match the group's.
    #[error("the protocol is inconsistent with the group's")]
    InconsistentGroupProtocol,
    #[error("group.max.size members are in the group")]
    GroupMaxSizeReached,
    /// KIP-394: a new member joins again with the id it was given.
    #[error("a member id is required: join again with the id given")]
    MemberIdRequired,
    #[error("the session timeout is outside group.min/max.session.timeout.ms")]
    InvalidSessionTimeout,
    /// A pending (KIP-394) member id sent with a `group.instance.id`:
    /// Kafka throws there, which the client sees as UNKNOWN_SERVER_ERROR.
    #[error("a pending member id came with a group.instance.id")]
    PendingMemberWithInstanceId,
}

impl GroupError {
    /// Kafka's error code for this error.
    pub fn code(self) -> i16 {
        use ResponseError as E;
        match self {
            GroupError::CoordinatorNotAvailable => E::CoordinatorNotAvailable.code(),
            GroupError::UnknownMemberId => E::UnknownMemberId.code(),
            GroupError::IllegalGeneration => E::IllegalGeneration.code(),
            GroupError::RebalanceInProgress => E::RebalanceInProgress.code(),
            GroupError::FencedInstanceId => E::FencedInstanceId.code(),
            GroupError::GroupIdNotFound => E::GroupIdNotFound.code(),
            GroupError::NonEmptyGroup => E::NonEmptyGroup.code(),
            GroupError::InconsistentGroupProtocol => E::InconsistentGroupProtocol.code(),
            GroupError::GroupMaxSizeReached => E::GroupMaxSizeReached.code(),
            GroupError::MemberIdRequired => E::MemberIdRequired.code(),
            GroupError::InvalidSessionTimeout => E::InvalidSessionTimeout.code(),
            GroupError::PendingMemberWithInstanceId => E::UnknownServerError.code(),
        }
    }

    /// The code of an answer: 0 when there is no error.
    pub fn code_of(result: Result<(), GroupError>) -> i16 {
        result.err().map_or(0, GroupError::code)
    }
}
