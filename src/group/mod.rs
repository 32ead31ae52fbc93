//! Consumer groups, without actors: the group state machine (`state`), the
//! records groups are persisted as in `__consumer_offsets` (`records`), and
//! which `__consumer_offsets` partition coordinates a group.
//!
//! Nothing here does I/O, reads a clock or knows actix; the consumer-group
//! actor is a thin shell that feeds events in and carries effects out.

pub mod error;
pub mod records;
pub mod state;

/// The internal topic holding committed offsets and group metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Java's `String.hashCode` over UTF-16 code units, as Kafka computes it.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(unit as i32)
    })
}

/// The `__consumer_offsets` partition whose leader coordinates `group_id`:
/// Kafka's `Utils.abs(groupId.hashCode) % offsets.topic.num.partitions`
/// (`Utils.abs` masks the sign bit, so `i32::MIN` maps to 0).
pub fn partition_for(group_id: &str, partitions: i32) -> i32 {
    (java_string_hash(group_id) & 0x7fff_ffff) % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hashes match Java's String.hashCode, including non-ASCII and
    /// overflow; partitions match Kafka's for known group ids.
    #[test]
    fn matches_java_and_kafka() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99162322);
        assert_eq!(java_string_hash("console-consumer-12345"), 158455506);
        assert_eq!(java_string_hash("é😀"), 1996812);
        assert_eq!(partition_for("hello", 50), 99162322 % 50);
        assert_eq!(partition_for("console-consumer-12345", 50), 158455506 % 50);
        // Values from java.lang.String.hashCode on OpenJDK 17.
        assert!((0..50).contains(&partition_for("x", 50)));
    }
}
