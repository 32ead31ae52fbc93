//! Replica assignment for topic creation and partition addition: Kafka's
//! `AdminUtils.assignReplicasToBrokers`, rack-unaware and rack-aware, kept
//! bit for bit so a topic created here is laid out as Kafka would lay it out. Leaders go round
//! robin over the brokers from a start index; each partition's followers
//! follow its leader at a shift that grows by one every time the leaders
//! wrap around, so replicas of consecutive rounds land on different brokers.
//! Pure functions: no store, no clock, no randomness except from a seed.

use std::collections::BTreeMap;

/// Why an assignment cannot be made; the first two are Kafka's
/// `INVALID_PARTITIONS` and `INVALID_REPLICATION_FACTOR`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssignmentError {
    #[error("number of partitions must be larger than 0 (and the partition ids must fit an i32), got {0}")]
    InvalidPartitions(i32),
    #[error("replication factor must be larger than 0 and at most the {brokers} available brokers, got {replication_factor}")]
    InvalidReplicationFactor {
        replication_factor: i16,
        brokers: usize,
    },
    #[error("broker {0} is listed more than once")]
    DuplicateBroker(i32),
}

/// Assigns `partitions` new partitions, numbered from `start_partition_id`
/// (negative counts as 0, as in Kafka), to `brokers` with
/// `replication_factor` replicas each; the first replica is the preferred
/// leader. Brokers are taken in ascending id order (Kafka's callers sort
/// them), so `start_index` indexes the sorted list. `start_index` and
/// `next_replica_shift` are Kafka's `fixedStartIndex` and initial shift
/// (both random on topic creation; see [`assign_replicas_random`]). To add
/// partitions as Kafka's `createPartitions` does, pass as both the index in
/// the sorted brokers of the first id >= partition 0's first replica, and
/// the existing partition count as `start_partition_id`.
pub fn assign_replicas(
    brokers: &[i32],
    partitions: i32,
    replication_factor: i16,
    start_index: usize,
    start_partition_id: i32,
    next_replica_shift: usize,
) -> Result<BTreeMap<i32, Vec<i32>>, AssignmentError> {
    let brokers = sorted_brokers(brokers)?;
    let (start_partition_id, n, rf) = check_request(
        brokers.len(),
        partitions,
        replication_factor,
        start_partition_id,
    )?;
    // Only the values modulo n (start) and n - 1 (shift) matter; reducing
    // them first keeps the arithmetic below far from overflow.
    let start_index = start_index % n;
    let mut shift = if n > 1 {
        next_replica_shift % (n - 1)
    } else {
        0
    };
    let mut assignment = BTreeMap::new();
    for partition in start_partition_id..start_partition_id + partitions {
        // Non-negative and checked above, so the conversion is lossless.
        let p = partition as usize;
        if p > 0 && p.is_multiple_of(n) {
            shift += 1;
        }
        let first = (p % n + start_index) % n;
        let mut replicas = Vec::with_capacity(rf);
        replicas.push(brokers[first]);
        for j in 0..rf - 1 {
            replicas.push(brokers[replica_index(first, shift, j, n)]);
        }
        assignment.insert(partition, replicas);
    }
    Ok(assignment)
}

/// Kafka's `replicaIndex`: the `j`-th follower sits `1 + (shift + j) %
/// (n - 1)` places after the leader, never on the leader itself.
fn replica_index(first: usize, shift: usize, j: usize, n: usize) -> usize {
    (first + 1 + (shift + j) % (n - 1)) % n
}

/// [`assign_replicas`] for a new topic, with the start index and shift that
/// Kafka draws at random taken from `rng_seed` instead, so tests and
/// simulations can reproduce an assignment.
pub fn assign_replicas_random(
    brokers: &[i32],
    partitions: i32,
    replication_factor: i16,
    rng_seed: u64,
) -> Result<BTreeMap<i32, Vec<i32>>, AssignmentError> {
    let n = brokers.len().max(1) as u64;
    let mut rng = XorShift64::new(rng_seed);
    let start_index = (rng.next() % n) as usize;
    let shift = (rng.next() % n) as usize;
    assign_replicas(
        brokers,
        partitions,
        replication_factor,
        start_index,
        0,
        shift,
    )
}

/// Kafka's `assignReplicasToBrokersRackAware`: brokers are taken in an
/// order alternating over the racks (sorted by rack name, then broker id),
/// leaders go round robin over that list, and each follower is the next
/// broker in the shifted walk that adds a rack (or, once every rack holds
/// a replica, a broker) without a replica yet. With as many racks as the
/// replication factor, every partition has one replica per rack.
pub fn assign_replicas_rack_aware(
    brokers: &[(i32, String)],
    partitions: i32,
    replication_factor: i16,
    start_index: usize,
    start_partition_id: i32,
    next_replica_shift: usize,
) -> Result<BTreeMap<i32, Vec<i32>>, AssignmentError> {
    let ids: Vec<i32> = brokers.iter().map(|(id, _)| *id).collect();
    sorted_brokers(&ids)?;
    let (start_partition_id, n, rf) = check_request(
        brokers.len(),
        partitions,
        replication_factor,
        start_partition_id,
    )?;
    let rack_of: BTreeMap<i32, &str> = brokers
        .iter()
        .map(|(id, rack)| (*id, rack.as_str()))
        .collect();
    let arranged = rack_alternated(brokers);
    let racks = rack_of
        .values()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let start_index = start_index % n;
    let mut shift = next_replica_shift % n;
    let mut assignment = BTreeMap::new();
    for partition in start_partition_id..start_partition_id + partitions {
        let p = partition as usize;
        if p > 0 && p.is_multiple_of(n) {
            shift += 1;
        }
        let first = (p + start_index) % n;
        let leader = arranged[first];
        let mut replicas = vec![leader];
        let mut racks_used = std::collections::BTreeSet::from([rack_of[&leader]]);
        let mut k = 0;
        for _ in 0..rf - 1 {
            // Kafka loops until a broker qualifies; one always does within
            // n * n steps (every broker is visited at every shift).
            for _ in 0..n * n {
                let broker = if n > 1 {
                    arranged[replica_index(first, shift * racks, k, n)]
                } else {
                    arranged[0]
                };
                k += 1;
                let rack = rack_of[&broker];
                let new_rack = !racks_used.contains(rack) || racks_used.len() == racks;
                let new_broker = !replicas.contains(&broker) || replicas.len() == n;
                if new_rack && new_broker {
                    replicas.push(broker);
                    racks_used.insert(rack);
                    break;
                }
            }
        }
        assignment.insert(partition, replicas);
    }
    Ok(assignment)
}

/// Kafka's `getRackAlternatedBrokerList`: one broker per rack in turn,
/// racks in name order, each rack's brokers in id order.
fn rack_alternated(brokers: &[(i32, String)]) -> Vec<i32> {
    let mut by_rack: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (id, rack) in brokers {
        by_rack.entry(rack.as_str()).or_default().push(*id);
    }
    let mut queues: Vec<std::collections::VecDeque<i32>> = by_rack
        .into_values()
        .map(|mut ids| {
            ids.sort_unstable();
            ids.into()
        })
        .collect();
    let mut arranged = Vec::with_capacity(brokers.len());
    while arranged.len() < brokers.len() {
        for queue in &mut queues {
            if let Some(id) = queue.pop_front() {
                arranged.push(id);
            }
        }
    }
    arranged
}

/// A new topic's assignment over `brokers` (id, rack): rack-aware when
/// every broker names its rack, as Kafka does, rack-unaware otherwise;
/// the random start index and shift come from `rng_seed`.
pub fn assign_for_new_topic(
    brokers: &[(i32, Option<String>)],
    partitions: i32,
    replication_factor: i16,
    rng_seed: u64,
) -> Result<BTreeMap<i32, Vec<i32>>, AssignmentError> {
    let with_racks: Option<Vec<(i32, String)>> = brokers
        .iter()
        .map(|(id, rack)| rack.clone().map(|rack| (*id, rack)))
        .collect();
    match with_racks {
        Some(racked) if !racked.is_empty() => {
            let n = racked.len() as u64;
            let mut rng = XorShift64::new(rng_seed);
            let start_index = (rng.next() % n) as usize;
            let shift = (rng.next() % n) as usize;
            assign_replicas_rack_aware(
                &racked,
                partitions,
                replication_factor,
                start_index,
                0,
                shift,
            )
        }
        _ => {
            let ids: Vec<i32> = brokers.iter().map(|(id, _)| *id).collect();
            assign_replicas_random(&ids, partitions, replication_factor, rng_seed)
        }
    }
}

/// Kafka's checks on a request: a positive partition count whose ids fit
/// an i32, and a replication factor between 1 and the broker count.
/// Returns the start partition id (negative counts as 0), the broker count
/// and the replication factor.
fn check_request(
    brokers: usize,
    partitions: i32,
    replication_factor: i16,
    start_partition_id: i32,
) -> Result<(i32, usize, usize), AssignmentError> {
    let start_partition_id = start_partition_id.max(0);
    if partitions <= 0 || start_partition_id.checked_add(partitions).is_none() {
        return Err(AssignmentError::InvalidPartitions(partitions));
    }
    let rf = usize::try_from(replication_factor).unwrap_or(0);
    if rf == 0 || rf > brokers {
        return Err(AssignmentError::InvalidReplicationFactor {
            replication_factor,
            brokers,
        });
    }
    Ok((start_partition_id, brokers, rf))
}

fn sorted_brokers(brokers: &[i32]) -> Result<Vec<i32>, AssignmentError> {
    let mut sorted = brokers.to_vec();
    sorted.sort_unstable();
    if let Some(pair) = sorted.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(AssignmentError::DuplicateBroker(pair[0]));
    }
    Ok(sorted)
}

/// xorshift64 seeded through splitmix64, so seeds 0, 1, 2... give unrelated
/// streams (plain xorshift is stuck at 0 for seed 0).
struct XorShift64(u64);

impl XorShift64 {
    fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        XorShift64(if z == 0 { 0x9e37_79b9_7f4a_7c15 } else { z })
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn racked(spec: &[(i32, &str)]) -> Vec<(i32, String)> {
        spec.iter()
            .map(|(id, rack)| (*id, rack.to_string()))
            .collect()
    }

    /// Kafka's rack alternation: racks in name order, ids in order.
    #[test]
    fn rack_alternated_order() {
        let brokers = racked(&[
            (0, "r1"),
            (1, "r3"),
            (2, "r3"),
            (3, "r2"),
            (4, "r2"),
            (5, "r1"),
        ]);
        assert_eq!(rack_alternated(&brokers), vec![0, 3, 1, 5, 4, 2]);
    }

    /// Every partition's replicas span as many racks as they can, on
    /// distinct brokers, and leaders are spread evenly.
    #[test]
    fn rack_aware_spreads_replicas_over_racks() {
        let brokers = racked(&[(0, "a"), (1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "b")]);
        for seed in 0..50 {
            for rf in 1..=4i16 {
                let assignment = assign_for_new_topic(
                    &brokers
                        .iter()
                        .map(|(id, r)| (*id, Some(r.clone())))
                        .collect::<Vec<_>>(),
                    12,
                    rf,
                    seed,
                )
                .expect("assignment");
                let mut leaders = BTreeMap::new();
                for replicas in assignment.values() {
                    assert_eq!(replicas.len(), rf as usize);
                    let distinct: std::collections::BTreeSet<_> = replicas.iter().collect();
                    assert_eq!(distinct.len(), replicas.len(), "{replicas:?}");
                    let racks: std::collections::BTreeSet<_> = replicas
                        .iter()
                        .map(|&b| if b < 3 { "a" } else { "b" })
                        .collect();
                    assert_eq!(racks.len(), (rf as usize).min(2), "{replicas:?}");
                    *leaders.entry(replicas[0]).or_insert(0) += 1;
                }
                assert!(leaders.values().all(|&c| c == 2), "{leaders:?}");
            }
        }
    }

    /// Without racks on every broker the layout is rack-unaware.
    #[test]
    fn partial_racks_fall_back_to_rack_unaware() {
        let brokers = vec![(0, Some("a".to_string())), (1, None), (2, None)];
        assert_eq!(
            assign_for_new_topic(&brokers, 6, 2, 7).expect("assignment"),
            assign_replicas_random(&[0, 1, 2], 6, 2, 7).expect("assignment")
        );
    }

    /// Kafka's own expected table (AdminTest.testReplicaAssignment): 5
    /// brokers, 10 partitions, rf 3, start 0, shift 0; the shift grows at p5.
    #[test]
    fn kafka_known_example() {
        let expected = BTreeMap::from([
            (0, vec![0, 1, 2]),
            (1, vec![1, 2, 3]),
            (2, vec![2, 3, 4]),
            (3, vec![3, 4, 0]),
            (4, vec![4, 0, 1]),
            (5, vec![0, 2, 3]),
            (6, vec![1, 3, 4]),
            (7, vec![2, 4, 0]),
            (8, vec![3, 0, 1]),
            (9, vec![4, 1, 2]),
        ]);
        let actual = assign_replicas(&[0, 1, 2, 3, 4], 10, 3, 0, 0, 0).expect("assign");
        assert_eq!(actual, expected);
    }

    /// Broker ids are used in ascending order whatever order they are given
    /// in, and start_index indexes that order.
    #[test]
    fn brokers_are_sorted_and_start_index_rotates_leaders() {
        let a = assign_replicas(&[30, 10, 20], 3, 2, 1, 0, 0).expect("assign");
        assert_eq!(
            a,
            BTreeMap::from([(0, vec![20, 30]), (1, vec![30, 10]), (2, vec![10, 20])])
        );
    }

    /// Adding partitions numbers them from start_partition_id, and the shift
    /// only grows at partition ids that are multiples of the broker count
    /// inside the added range (as in Kafka, which draws a fresh shift for
    /// additions): given the shift creation had reached by then, the added
    /// partitions match a creation of all of them at once.
    #[test]
    fn partition_addition_numbers_from_start_partition_id() {
        let brokers = [0, 1, 2, 3, 4];
        let all = assign_replicas(&brokers, 10, 3, 0, 0, 0).expect("all");
        // Creation bumped the shift to 1 at partition 5.
        let added = assign_replicas(&brokers, 4, 3, 0, 6, 1).expect("added");
        assert_eq!(added.keys().copied().collect::<Vec<_>>(), [6, 7, 8, 9]);
        for (p, replicas) in &added {
            assert_eq!(&all[p], replicas);
        }
        // With shift 0 the followers of p6 sit right after its leader.
        let fresh = assign_replicas(&brokers, 1, 3, 0, 6, 0).expect("fresh");
        assert_eq!(fresh[&6], [1, 2, 3]);
    }

    /// Invalid inputs fail with Kafka's error kinds, never a panic.
    #[test]
    fn invalid_inputs() {
        assert_eq!(
            assign_replicas(&[0, 1], 0, 1, 0, 0, 0),
            Err(AssignmentError::InvalidPartitions(0))
        );
        assert_eq!(
            assign_replicas(&[0, 1], 2, 1, 0, i32::MAX, 0),
            Err(AssignmentError::InvalidPartitions(2))
        );
        for rf in [0, -1, 3] {
            assert_eq!(
                assign_replicas(&[0, 1], 1, rf, 0, 0, 0),
                Err(AssignmentError::InvalidReplicationFactor {
                    replication_factor: rf,
                    brokers: 2
                })
            );
        }
        assert!(matches!(
            assign_replicas_random(&[], 1, 1, 7),
            Err(AssignmentError::InvalidReplicationFactor { brokers: 0, .. })
        ));
        assert_eq!(
            assign_replicas(&[1, 2, 1], 1, 1, 0, 0, 0),
            Err(AssignmentError::DuplicateBroker(1))
        );
    }

    /// For many shapes and seeds every partition gets rf distinct known
    /// brokers and leaders are spread evenly (counts differ by at most one).
    #[test]
    fn seeded_assignments_are_valid_balanced_and_reproducible() {
        for n in 1..=7 {
            let brokers: Vec<i32> = (100..100 + n).collect();
            for rf in 1..=n as i16 {
                for seed in 0..20 {
                    let a = assign_replicas_random(&brokers, 13, rf, seed).expect("assign");
                    assert_eq!(
                        a,
                        assign_replicas_random(&brokers, 13, rf, seed).expect("again")
                    );
                    assert_eq!(a.len(), 13);
                    let mut leaders = BTreeMap::new();
                    for replicas in a.values() {
                        assert_eq!(replicas.len(), rf as usize);
                        let mut distinct = replicas.clone();
                        distinct.sort_unstable();
                        distinct.dedup();
                        assert_eq!(distinct.len(), replicas.len(), "{replicas:?}");
                        assert!(replicas.iter().all(|b| brokers.contains(b)));
                        *leaders.entry(replicas[0]).or_insert(0) += 1;
                    }
                    let most = leaders.values().max().copied().unwrap_or(0);
                    let least = if leaders.len() == brokers.len() {
                        leaders.values().min().copied().unwrap_or(0)
                    } else {
                        0
                    };
                    assert!(most - least <= 1, "{leaders:?}");
                }
            }
        }
    }

    /// Different seeds pick different layouts (the start index varies).
    #[test]
    fn seeds_vary_the_start() {
        let leaders: std::collections::BTreeSet<i32> = (0..50)
            .map(|seed| {
                assign_replicas_random(&[0, 1, 2, 3, 4], 1, 1, seed).expect("assign")[&0][0]
            })
            .collect();
        assert_eq!(leaders.len(), 5);
    }
}
