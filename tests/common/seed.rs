//! The property tests' seed: `PROPTEST_RNG_SEED` when set (to replay a
//! failure), else a fresh one per run, so CI explores new cases each time.
//! It is printed with every test that asks for it; a failing test's output
//! (which the harness shows) names the seed that replays it.

use proptest::test_runner::{Config, RngSeed};

pub fn rng_seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let seed = *SEED.get_or_init(|| {
        std::env::var("PROPTEST_RNG_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| {
                use std::hash::BuildHasher;
                std::collections::hash_map::RandomState::new()
                    .hash_one(std::time::SystemTime::now())
            })
    });
    eprintln!("property test seed: PROPTEST_RNG_SEED={seed} replays this run");
    seed
}

/// `config` with the run's seed.
pub fn seeded(config: Config) -> Config {
    Config {
        rng_seed: RngSeed::Fixed(rng_seed()),
        ..config
    }
}
