//! Storage-engine throughput next to raw file I/O, measured in the same run,
//! on the same filesystem (a temp dir under `std::env::temp_dir()`).
//!
//! Every pair reports `Throughput::Bytes`, so criterion prints MB/s:
//!
//! - `append/ferrolog_append` vs `append/raw_write`: 64 MiB per iteration of
//!   16 KiB v2 batches (16 records of ~1 KiB, uncompressed) appended to a
//!   fresh `PartitionLog` with the default `LogConfig`, against plain
//!   sequential `File::write_all` of the same batch the same number of times
//!   into a new file. Neither fsyncs (the broker's default relies on the page
//!   cache). Each ferrolog append takes the batch as a shared `Bytes`, as the
//!   broker takes a produce request's bytes (no copy: the new base offset
//!   goes out through `pwritev` beside the untouched batch). Creating and
//!   deleting the log/file is not timed.
//! - `read/ferrolog_read` vs `read/raw_read`: a page-cached 64 MiB log read
//!   front to back. ferrolog: `PartitionLog::read(offset, 1 MiB, None)`, copy
//!   the region into a reusable buffer with `read_at` (a non-sendfile fetch),
//!   walk the entries with `EntryHeader::parse` and continue after the last
//!   complete one (the cut entry at the end of each region is read again).
//!   raw: sequential `read` of the same `.log` file with a 1 MiB buffer.
//! - `recovery/ferrolog_recovery` vs `recovery/raw_read_1gib`: a 1 GiB log
//!   (one segment at the default 1 GiB `segment.bytes`) loaded with
//!   `clean_shutdown: false, recovery_point: 0`, so every segment is re-read,
//!   CRC-checked and its indexes rebuilt and rewritten (with an fsync of the
//!   index files, as recovery does); raw: sequential `read` of the same
//!   `.log` files with a 1 MiB buffer. The size is
//!   `FERROLOG_BENCH_RECOVERY_MIB` MiB (default 1024) for shorter runs.
//!
//! - `cleaner/ferrolog_clean` vs `cleaner/raw_read`: one cleaning
//!   (`storage::cleaner::clean`: key map, filtered copy into `.cleaned`
//!   segments, fsynced) of a 64 MiB compacted log of 16-record batches with
//!   ~1 KiB values where every key was written twice (half the records go),
//!   against sequential `read` of the same segment files. The `.cleaned`
//!   files are removed between iterations, untimed. `FERROLOG_BENCH_CLEAN_MIB`
//!   sets the size.
//!
//! Set `FERROLOG_BENCH_BREAKDOWN=1` to add `append/raw_write_copy` (the
//! `BytesMut` copy + write) and `append/raw_write_copy_crc` (+ the CRC32C
//! check), which split ferrolog_append's overhead over raw_write.
//!
//! Fixtures are written once and fsynced before measuring so that background
//! writeback does not disturb the reads.
//!
//! Run: `cargo bench --bench storage`
//! Quick run (criterion 0.5 `--quick`, and a smaller recovery log):
//! `FERROLOG_BENCH_RECOVERY_MIB=128 cargo bench --bench storage -- --quick`

use std::fs::{self, File};
use std::hint::black_box;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use kafka_protocol::records::Compression;
use tempfile::TempDir;

use ferrolog::storage::batch::EntryHeader;
use ferrolog::storage::segment::log_file_name;
use ferrolog::storage::testing::batch_v2;
use ferrolog::storage::{LoadOptions, LogConfig, PartitionLog};
use ferrolog::topic_partition::TopicPartition;

const NOW_MS: i64 = 1_700_000_000_000;
const RECORDS_PER_BATCH: usize = 16;
const BATCH_TARGET_BYTES: usize = 16 * 1024;
const APPEND_BYTES: usize = 64 * 1024 * 1024;
const READ_LOG_BYTES: usize = 64 * 1024 * 1024;
const READ_CHUNK: usize = 1024 * 1024;

fn tp() -> TopicPartition {
    TopicPartition::new("bench", 0)
}

/// One v2 batch of 16 records, as close to 16 KiB as the encoding allows
/// without exceeding it (so records are ~1 KiB each, overhead included).
fn batch_16k() -> Bytes {
    let mut value_len = 1024;
    loop {
        let batch = batch_v2(RECORDS_PER_BATCH, value_len, Compression::None);
        if batch.len() <= BATCH_TARGET_BYTES {
            let header = EntryHeader::parse(&batch, 0).expect("valid batch header");
            assert_eq!(
                header.size,
                batch.len(),
                "the builder must produce ONE batch"
            );
            assert_eq!(header.last_offset, RECORDS_PER_BATCH as i64 - 1);
            return batch;
        }
        value_len -= 1;
    }
}

fn scratch_dir() -> TempDir {
    tempfile::tempdir_in(std::env::temp_dir()).expect("temp dir")
}

/// A log in `<dir>/bench-0` holding `batches` copies of `batch`, fsynced.
fn build_log(dir: &Path, batch: &Bytes, batches: usize) -> PartitionLog {
    let mut log =
        PartitionLog::create(dir, tp(), LogConfig::default(), NOW_MS).expect("create log");
    for _ in 0..batches {
        log.append(BytesMut::from(&batch[..]), NOW_MS)
            .expect("append");
    }
    log.flush(NOW_MS).expect("flush");
    log
}

fn log_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    files.sort();
    files
}

/// Sequential `read` of `files` with a 1 MiB buffer; returns the bytes read.
fn raw_read_files(files: &[PathBuf], buf: &mut [u8]) -> u64 {
    let mut total = 0u64;
    for path in files {
        let mut file = File::open(path).expect("open");
        loop {
            let n = file.read(buf).expect("read");
            if n == 0 {
                break;
            }
            black_box(&buf[..n]);
            total += n as u64;
        }
    }
    total
}

/// A benchmark group of flat sampling: `samples` samples over
/// `measure_secs` s after a 1 s warm-up, reported as `bytes` per iteration.
fn flat_group<'a>(
    c: &'a mut Criterion,
    name: &str,
    samples: usize,
    measure_secs: u64,
    bytes: u64,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(samples)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(measure_secs))
        .throughput(Throughput::Bytes(bytes));
    group
}

fn bench_append(c: &mut Criterion) {
    let batch = batch_16k();
    let batches = APPEND_BYTES / batch.len();
    let total = (batches * batch.len()) as u64;
    eprintln!(
        "append: {batches} batches of {} bytes ({RECORDS_PER_BATCH} records) = {total} bytes per iteration",
        batch.len()
    );
    let base = scratch_dir();
    let mut group = flat_group(c, "append", 15, 4, total);

    let mut n = 0u64;
    group.bench_function("ferrolog_append", |b| {
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                let dir = base.path().join(format!("append-{n}"));
                let mut log = PartitionLog::create(&dir, tp(), LogConfig::default(), NOW_MS)
                    .expect("create log");
                let start = Instant::now();
                for _ in 0..batches {
                    // The broker appends the request's own bytes (a shared
                    // `Bytes`, no copy); so does the bench.
                    black_box(log.append(batch.clone(), NOW_MS).expect("append"));
                }
                elapsed += start.elapsed();
                assert_eq!(log.size_in_bytes(), total);
                drop(log);
                fs::remove_dir_all(&dir).expect("remove log dir");
            }
            elapsed
        })
    });

    group.bench_function("raw_write", |b| {
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                let path = base.path().join(format!("raw-{n}.log"));
                let mut file = File::create(&path).expect("create file");
                let start = Instant::now();
                for _ in 0..batches {
                    file.write_all(black_box(&batch[..])).expect("write");
                }
                elapsed += start.elapsed();
                drop(file);
                fs::remove_file(&path).expect("remove file");
            }
            elapsed
        })
    });
    if std::env::var_os("FERROLOG_BENCH_BREAKDOWN").is_some() {
        // Where ferrolog_append's extra time goes: the BytesMut copy, then
        // the CRC32C check assign_offsets makes, on top of the raw write.
        for (name, crc) in [("raw_write_copy", false), ("raw_write_copy_crc", true)] {
            group.bench_function(name, |b| {
                b.iter_custom(|iters| {
                    let mut elapsed = Duration::ZERO;
                    for _ in 0..iters {
                        n += 1;
                        let path = base.path().join(format!("raw-{n}.log"));
                        let mut file = File::create(&path).expect("create file");
                        let start = Instant::now();
                        for _ in 0..batches {
                            let records = BytesMut::from(&batch[..]);
                            if crc {
                                // The v2 CRC covers the batch from its attributes on.
                                black_box(crc32c::crc32c(&records[21..]));
                            }
                            file.write_all(&records).expect("write");
                        }
                        elapsed += start.elapsed();
                        drop(file);
                        fs::remove_file(&path).expect("remove file");
                    }
                    elapsed
                })
            });
        }
    }
    group.finish();
}

fn bench_read(c: &mut Criterion) {
    let batch = batch_16k();
    let dir = scratch_dir();
    let log = build_log(dir.path(), &batch, READ_LOG_BYTES / batch.len());
    let size = log.size_in_bytes();
    assert_eq!(log.segment_count(), 1);
    let log_path = log.dir().join(log_file_name(0));
    assert_eq!(fs::metadata(&log_path).expect("stat").len(), size);
    eprintln!("read: log of {size} bytes at {}", log_path.display());

    let mut group = flat_group(c, "read", 15, 3, size);

    let mut buf = vec![0u8; READ_CHUNK];
    group.bench_function("ferrolog_read", |b| {
        b.iter(|| {
            let end = log.log_end_offset();
            let mut offset = 0i64;
            let mut consumed = 0u64;
            while offset < end {
                let info = log.read(offset, READ_CHUNK as u64, None).expect("read");
                let region = info.region.expect("a region below the log end");
                let len = region.length as usize;
                if buf.len() < len {
                    buf.resize(len, 0);
                }
                region
                    .file
                    .read_exact_at(&mut buf[..len], region.position)
                    .expect("read_at");
                // Continue after the last complete entry in the buffer.
                let mut position = 0;
                let mut next = None;
                while let Ok(header) = EntryHeader::parse(&buf[position..len], position) {
                    if position + header.size > len {
                        break;
                    }
                    next = Some(header.last_offset + 1);
                    position += header.size;
                }
                black_box(&buf[..position]);
                consumed += position as u64;
                offset = next.expect("at least one complete entry per read");
            }
            assert_eq!(consumed, size);
            consumed
        })
    });

    let files = vec![log_path.clone()];
    group.bench_function("raw_read", |b| {
        b.iter(|| {
            let read = raw_read_files(&files, &mut buf);
            assert_eq!(read, size);
            read
        })
    });
    group.finish();
    drop(log);
}

/// A fixture size in MiB: `$var`, else `full` under `cargo bench`, else
/// `smoke` (`cargo test --all-targets` runs each bench once without
/// `--bench`, as a smoke test, so the fixture stays small there).
fn fixture_mib(var: &str, smoke: usize, full: usize) -> usize {
    let benching = std::env::args().any(|a| a == "--bench");
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { full } else { smoke })
}

fn bench_recovery(c: &mut Criterion) {
    let mib = fixture_mib("FERROLOG_BENCH_RECOVERY_MIB", 8, 1024);
    let batch = batch_16k();
    let batches = (mib * 1024 * 1024 / batch.len()).max(1);
    let dir = scratch_dir();
    let build_start = Instant::now();
    let log = build_log(dir.path(), &batch, batches);
    let size = log.size_in_bytes();
    let segments = log.segment_count();
    let log_dir = log.dir().to_path_buf();
    log.close(NOW_MS).expect("close");
    eprintln!(
        "recovery: log of {size} bytes in {segments} segment(s), built in {:.1?}",
        build_start.elapsed()
    );
    let files = log_files(&log_dir);
    assert_eq!(files.len(), segments);

    let mut group = flat_group(c, "recovery", 10, 5, size);

    let options = LoadOptions::default();
    group.bench_function("ferrolog_recovery", |b| {
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let (log, report) =
                    PartitionLog::load(&log_dir, tp(), LogConfig::default(), options, NOW_MS)
                        .expect("load");
                elapsed += start.elapsed();
                assert_eq!(report.recovered_segments, segments);
                assert_eq!(report.bytes_scanned, size);
                assert_eq!(report.truncated_bytes, 0);
                drop(black_box(log));
            }
            elapsed
        })
    });

    let mut buf = vec![0u8; READ_CHUNK];
    group.bench_function("raw_read_1gib", |b| {
        b.iter(|| {
            let read = raw_read_files(&files, &mut buf);
            assert_eq!(read, size);
            read
        })
    });
    group.finish();
}

fn bench_cleaner(c: &mut Criterion) {
    use ferrolog::storage::cleaner::{clean, CleanerLimits};
    use ferrolog::storage::config::CleanupPolicy;
    use ferrolog::storage::testing::keyed_batch;
    let mib = fixture_mib("FERROLOG_BENCH_CLEAN_MIB", 4, 64);
    let config = LogConfig {
        segment_bytes: 8 * 1024 * 1024,
        cleanup_policy: CleanupPolicy::COMPACT,
        min_cleanable_dirty_ratio: 0.0,
        ..LogConfig::default()
    };
    let dir = scratch_dir();
    let mut log = PartitionLog::create(dir.path(), tp(), config, NOW_MS).expect("create log");
    let value = "v".repeat(1000);
    let records = mib * 1024 * 1024 / (1024 + 40);
    let distinct = (records / 2).max(1);
    let keys: Vec<String> = (0..distinct).map(|k| format!("key-{k:08}")).collect();
    for first in (0..records).step_by(RECORDS_PER_BATCH) {
        let entries: Vec<(&str, Option<&str>)> = (first..first + RECORDS_PER_BATCH)
            .map(|i| (keys[i % distinct].as_str(), Some(value.as_str())))
            .collect();
        log.append(keyed_batch(&entries, NOW_MS, Compression::None), NOW_MS)
            .expect("append");
    }
    log.roll(NOW_MS).expect("roll");
    log.set_high_watermark(log.log_end_offset());
    log.flush(NOW_MS).expect("flush");
    let task = log.clean_task(NOW_MS).expect("a cleanable log");
    let size: u64 = task.segments.iter().map(|s| s.size).sum();
    let files = log_files(log.dir());
    let cleaned_files = || -> Vec<PathBuf> {
        fs::read_dir(log.dir())
            .expect("read dir")
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.to_string_lossy().ends_with(".cleaned"))
            .collect()
    };
    let mut group = flat_group(c, "cleaner", 10, 5, size);
    group.bench_function("ferrolog_clean", |b| {
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let outcome = clean(&task, &CleanerLimits::default()).expect("clean");
                elapsed += start.elapsed();
                assert!(outcome.stats.records_kept * 2 <= outcome.stats.records_read + 32);
                for file in cleaned_files() {
                    fs::remove_file(file).expect("remove .cleaned");
                }
            }
            elapsed
        })
    });
    let mut buf = vec![0u8; READ_CHUNK];
    group.bench_function("raw_read", |b| {
        b.iter(|| {
            let read = raw_read_files(&files, &mut buf);
            assert!(read >= size);
            read
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    bench_append,
    bench_read,
    bench_recovery,
    bench_cleaner
);
criterion_main!(benches);
