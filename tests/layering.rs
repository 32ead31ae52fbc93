//! The layering rules ARCHITECTURE.md states, read off the source so that
//! breaking one fails a test:
//!
//! - the pure layers (`src/storage`, `src/protocol`, `src/metadata`,
//!   `src/cluster.rs`, `src/config`, `src/group`, `src/replication.rs`,
//!   `src/controller`) know nothing of actix: they are plain Rust, unit
//!   tested without a runtime;
//! - among the actors only the log manager and its shards touch files
//!   (`std::fs`): every data file goes through them;
//! - request handlers in `src/api` reach the metadata store only for
//!   OffsetCommit/OffsetFetch v0 (`zookeeper_offsets.rs`; `mod.rs` holds the
//!   context field it reads);
//! - among the actors only the connection (`actors/connection.rs`, which
//!   hands each request to `api::handle`) uses the request handlers;
//! - the storage engine knows nothing of the wire layer above it (no
//!   `crate::protocol`, `crate::api`, `crate::net`), and its files use each
//!   other without a circle, so each can be read bottom-up.
//!
//! Comments are not code: a line whose text starts with `//` is skipped.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `path` (or `path` itself).
fn rust_files(path: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![path.to_path_buf()];
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("a readable directory") {
                pending.push(entry.expect("a directory entry").path());
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// `(file, line number, line)` of each code line under `paths` that
/// contains any of `needles`.
fn code_lines_containing(paths: &[PathBuf], needles: &[&str]) -> Vec<String> {
    let mut hits = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path).expect("a readable source file");
        for (number, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            if needles.iter().any(|needle| line.contains(needle)) {
                hits.push(format!(
                    "{}:{}: {}",
                    path.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    hits
}

/// Each rule is checked on a planted violation first, so a rule that
/// could never fire (a wrong path, a needle that never matches) fails.
fn assert_rule_fires(needles: &[&str], planted: &str) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("planted.rs");
    std::fs::write(&file, format!("// {planted}\n{planted}\n")).expect("written");
    let hits = code_lines_containing(&[file], needles);
    assert_eq!(
        hits.len(),
        1,
        "the rule {needles:?} misses the planted line {planted:?} (or counts its comment)"
    );
}

/// Fails with every offending line when a code line of `files` contains
/// any of `needles`.
fn assert_no_line_contains(files: &[PathBuf], needles: &[&str], broken: &str) {
    let hits = code_lines_containing(files, needles);
    assert!(hits.is_empty(), "{broken}:\n{}", hits.join("\n"));
}

#[test]
fn the_pure_layers_know_nothing_of_actix() {
    let needles = ["actix"];
    assert_rule_fires(&needles, "use actix::prelude::*;");
    let src = root().join("src");
    let layers: Vec<PathBuf> = [
        "storage",
        "protocol",
        "metadata",
        "cluster.rs",
        "config",
        "group",
        "replication.rs",
        "controller",
        "security",
    ]
    .iter()
    .map(|layer| src.join(layer))
    .inspect(|path| assert!(path.exists(), "{} is gone: update the rule", path.display()))
    .flat_map(|path| rust_files(&path))
    .collect();
    assert!(layers.len() >= 20, "only {} files read", layers.len());
    assert_no_line_contains(&layers, &needles, "actix in a pure layer");
}

#[test]
fn only_the_log_manager_touches_files_among_the_actors() {
    let needles = ["std::fs", "fs::File", "fs::read", "fs::write", "fs::remove"];
    assert_rule_fires(&needles, "let f = std::fs::File::open(path);");
    let actors = root().join("actors");
    let log_manager = actors.join("log_manager");
    assert!(
        log_manager.is_dir(),
        "actors/log_manager is gone: update the rule"
    );
    let files: Vec<PathBuf> = rust_files(&actors)
        .into_iter()
        .filter(|path| !path.starts_with(&log_manager))
        .collect();
    assert!(files.len() >= 20, "only {} files read", files.len());
    assert_no_line_contains(
        &files,
        &needles,
        "an actor outside the log manager touches files",
    );
}

#[test]
fn request_handlers_reach_the_metadata_store_only_for_v0_offsets() {
    let needles = ["MetadataStore", "ctx.store", "context.store"];
    assert_rule_fires(&needles, "let znode = ctx.store.get(path);");
    let api = root().join("src").join("api");
    let allowed = [api.join("zookeeper_offsets.rs"), api.join("mod.rs")];
    assert!(
        allowed[0].exists(),
        "zookeeper_offsets.rs is gone: update the rule"
    );
    let files: Vec<PathBuf> = rust_files(&api)
        .into_iter()
        .filter(|path| !allowed.contains(path))
        .collect();
    assert!(files.len() >= 20, "only {} files read", files.len());
    assert_no_line_contains(&files, &needles, "a handler uses the metadata store");
}

#[test]
fn storage_knows_nothing_of_the_wire_layer() {
    let needles = ["crate::protocol", "crate::api", "crate::net"];
    assert_rule_fires(&needles, "use crate::protocol::records::encode_batch;");
    let files = rust_files(&root().join("src").join("storage"));
    assert!(files.len() >= 10, "only {} files read", files.len());
    assert_no_line_contains(&files, &needles, "storage reaches up to the wire layer");
}

/// The sibling modules `text` (one storage file, its unit tests left out)
/// uses, by `super::name` or `crate::storage::name`.
fn storage_modules_used(text: &str, siblings: &[String]) -> Vec<String> {
    let code: String = text
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    siblings
        .iter()
        .filter(|name| {
            [
                format!("super::{name}::"),
                format!("crate::storage::{name}::"),
            ]
            .iter()
            .chain([format!("super::{name}}}"), format!("super::{name};")].iter())
            .any(|path| code.contains(path.as_str()))
                || code.contains(&format!("super::{{{name}"))
        })
        .cloned()
        .collect()
}

/// A circle in `uses` (module -> modules it uses), as the modules on it.
fn find_circle(uses: &std::collections::BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        uses: &std::collections::BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|m| m == module) {
            let mut circle = path[start..].to_vec();
            circle.push(module.to_string());
            return Some(circle);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_string());
        for next in uses.get(module).into_iter().flatten() {
            if let Some(circle) = visit(next, uses, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(module.to_string());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    uses.keys()
        .find_map(|module| visit(module, uses, &mut Vec::new(), &mut done))
}

#[test]
fn storage_files_use_each_other_without_a_circle() {
    let planted: std::collections::BTreeMap<String, Vec<String>> = [
        ("a".to_string(), vec!["b".to_string()]),
        ("b".to_string(), vec!["a".to_string()]),
    ]
    .into_iter()
    .collect();
    assert!(
        find_circle(&planted).is_some(),
        "a planted circle is missed"
    );
    let siblings = vec!["error".to_string(), "batch".to_string()];
    assert_eq!(
        storage_modules_used(
            "use super::error::LogError;\n// super::batch::X\n",
            &siblings
        ),
        vec!["error".to_string()],
        "a use is missed or a comment counted"
    );

    let storage = root().join("src").join("storage");
    let files: Vec<PathBuf> = rust_files(&storage)
        .into_iter()
        .filter(|path| path.file_name().is_some_and(|name| name != "mod.rs"))
        .collect();
    let siblings: Vec<String> = files
        .iter()
        .filter_map(|path| path.file_stem())
        .map(|stem| stem.to_string_lossy().into_owned())
        .collect();
    assert!(siblings.len() >= 10, "only {} files read", siblings.len());
    let uses: std::collections::BTreeMap<String, Vec<String>> = files
        .iter()
        .zip(&siblings)
        .map(|(path, name)| {
            let text = std::fs::read_to_string(path).expect("a readable source file");
            let used = storage_modules_used(&text, &siblings)
                .into_iter()
                .filter(|used| used != name)
                .collect();
            (name.clone(), used)
        })
        .collect();
    assert!(
        uses.get("log")
            .is_some_and(|used| used.contains(&"segment".to_string())),
        "log.rs's use of segment.rs is missed: {uses:?}"
    );
    assert_eq!(
        find_circle(&uses),
        None,
        "storage files in a circle: {uses:?}"
    );
}

#[test]
fn only_the_connection_uses_the_request_handlers_among_the_actors() {
    let needles = ["crate::api"];
    assert_rule_fires(&needles, "use crate::api::{self, RequestOrigin};");
    let actors = root().join("actors");
    let connection = actors.join("connection.rs");
    assert!(
        connection.exists(),
        "actors/connection.rs is gone: update the rule"
    );
    let files: Vec<PathBuf> = rust_files(&actors)
        .into_iter()
        .filter(|path| *path != connection)
        .collect();
    assert!(files.len() >= 20, "only {} files read", files.len());
    assert_no_line_contains(
        &files,
        &needles,
        "an actor other than the connection uses the request handlers",
    );
}

/// The test names `text` cites in backticks: `file.rs::name` as
/// `(Some("file.rs"), "name")`, `module::tests::name` as `(None, "name")`.
fn cited_tests(text: &str) -> Vec<(Option<String>, String)> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|span| {
            let (path, name) = span.rsplit_once("::")?;
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return None;
            }
            let file = path.rsplit("::").next().unwrap_or(path);
            if let Some(file) = file.strip_suffix(".rs") {
                let file = file.rsplit('/').next().unwrap_or(file);
                Some((Some(format!("{file}.rs")), name.to_string()))
            } else if path.ends_with("::tests") {
                Some((None, name.to_string()))
            } else {
                None
            }
        })
        .collect()
}

/// ARCHITECTURE.md backs its claims with the tests that would fail: every
/// test it cites (`file.rs::name`, `module::tests::name`) exists, so a
/// renamed or deleted test cannot leave a claim pointing at nothing.
#[test]
fn every_test_architecture_md_cites_exists() {
    let planted = cited_tests("see `log.rs::a_test`, `x::tests::b_test`, `Foo::bar`");
    assert_eq!(
        planted,
        vec![
            (Some("log.rs".to_string()), "a_test".to_string()),
            (None, "b_test".to_string())
        ],
        "the citation parser misses or invents one"
    );
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let sources: Vec<(PathBuf, String)> = ["src", "actors", "tests", "examples"]
        .iter()
        .flat_map(|dir| rust_files(&root().join(dir)))
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a readable source file");
            (path, text)
        })
        .collect();
    let cited = cited_tests(&text);
    assert!(cited.len() >= 50, "only {} citations found", cited.len());
    let missing: Vec<String> = cited
        .iter()
        .filter(|(file, name)| {
            let defines = format!("fn {name}(");
            !sources.iter().any(|(path, source)| {
                let in_file = file.as_ref().is_none_or(|file| {
                    path.file_name()
                        .is_some_and(|n| n.to_string_lossy() == file.as_str())
                });
                in_file && source.contains(&defines)
            })
        })
        .map(|(file, name)| format!("{}::{name}", file.as_deref().unwrap_or("tests")))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md cites tests that do not exist: {missing:?}"
    );
}

/// The broker binary carries code, not data: a 256 MiB all-zero `static`
/// (the splice placeholder) once sat in `.rodata` of every binary linking
/// the crate, ~40 test binaries twice over, and filled a CI machine's
/// disk. A debug build of the broker is well under 150 MB without one.
#[test]
fn the_broker_binary_holds_no_huge_static_data() {
    let binary = env!("CARGO_BIN_EXE_ferrolog");
    let size = std::fs::metadata(binary).expect("the broker binary").len();
    assert!(
        size < 150 * 1024 * 1024,
        "{binary} is {} MiB",
        size / (1024 * 1024)
    );
}
