//! Checks of how the code is laid out, as docs/architecture.md promises it: they read
//! the sources, so that a change that breaks a promise fails here, not in review.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                out.push((path, text));
            }
        }
    }
    out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// A file's code outside its tests: before its `#[cfg(test)]` module; none for a
/// file that is a test module (`tests.rs`).
fn code_outside_tests(path: &Path, text: &str) -> Option<String> {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return None;
    }
    Some(
        text.split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// Statements that differ by backend, and hand-written SQL, live in `src/db/`.
#[test]
fn per_backend_sql_lives_in_db() {
    let marks = ["DbConnection::Pg", "DbConnection::Sqlite", "sql_query("];
    let mut found = Vec::new();
    let mut seen_in_db = 0;
    for (path, text) in sources(&src()) {
        let Some(code) = code_outside_tests(&path, &text) else {
            continue;
        };
        let in_db = path.starts_with(src().join("db"));
        for mark in marks {
            if code.contains(mark) {
                if in_db {
                    seen_in_db += 1;
                } else if !path.ends_with("architecture_tests.rs") {
                    found.push(format!("{} uses {mark}", path.display()));
                }
            }
        }
    }
    // The reader must see what it looks for, or this test would pass on nothing.
    assert!(seen_in_db > 5, "no per-backend SQL found in src/db");
    assert!(
        found.is_empty(),
        "per-backend SQL outside src/db:\n{}",
        found.join("\n")
    );
}

/// A COE's state is written by `services::lifecycle` alone (its moves are the life
/// cycle's, each with its version bump and audit record).
#[test]
fn only_the_life_cycle_writes_a_coes_state() {
    let mut writers = Vec::new();
    for (path, text) in sources(&src()) {
        let Some(code) = code_outside_tests(&path, &text) else {
            continue;
        };
        // A write sets the column (`.set(… coes::state.eq(…) …)`); a read filters on it.
        for (at, _) in code.match_indices("coes::state.eq(") {
            let before = &code[at.saturating_sub(120)..at];
            let set = before.rfind(".set(");
            let filter = before
                .rfind(".filter(")
                .max(before.rfind("filter("))
                .max(before.rfind(".or("));
            if set.is_some_and(|s| filter.is_none_or(|f| f < s)) {
                writers.push(path.display().to_string());
            }
        }
    }
    writers.dedup();
    assert_eq!(
        writers,
        [src().join("services/lifecycle.rs").display().to_string()],
        "coes.state written outside services::lifecycle"
    );
}
