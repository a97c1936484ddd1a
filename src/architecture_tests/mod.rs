//! Checks of how the code is laid out, as docs/architecture.md promises it: they read
//! the sources, so that a change that breaks a promise fails here, not in review.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod rules;
mod wings;

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

/// What a change sets off is made by the outbound spine alone
/// (`services::outbound::happened`, `noted`): outside `src/services/outbound/`, no
/// service or handler writes a history row, queues an email, a chat notice or a
/// tracker job, reindexes a COE or withdraws an approval itself (docs/architecture.md,
/// "What a change sets off"). The pattern is issue 64's own check.
#[test]
fn consequences_are_made_by_the_spine_alone() {
    let direct = regex::Regex::new(
        r"notify::|outbox::(enqueue|composed|notify)\(|chat::(enqueue|enqueue_body|notify|coe_notice)\(|tickets::[a-z_]+\(|search_index::reindex\(|approval::(touch_in_review|withdraw_stale_approval)\(|audit::record\(",
    )
    .expect("a pattern");
    let spine = src().join("services/outbound");
    let (mut in_spine, mut found) = (0, Vec::new());
    for dir in ["services", "http"] {
        for (path, text) in sources(&src().join(dir)) {
            let Some(code) = code_outside_tests(&path, &text) else {
                continue;
            };
            for (n, line) in code.lines().enumerate() {
                if !direct.is_match(line) {
                    continue;
                }
                if path.starts_with(&spine) {
                    in_spine += 1;
                } else {
                    found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(in_spine >= 10, "the reader found the spine's own calls");
    assert!(
        found.is_empty(),
        "consequences made outside the outbound spine:\n{}",
        found.join("\n")
    );
}

/// The use cases know nothing of HTTP: no path in `src/services/` (outside tests)
/// names `crate::error` (the API's error), `crate::http` or actix; each service
/// answers with an error of its own, which `src/error.rs` turns into an answer.
#[test]
fn services_know_nothing_of_http() {
    let (mut read, mut found) = (0, Vec::new());
    for (path, text) in sources(&src().join("services")) {
        let Some(code) = code_outside_tests(&path, &text) else {
            continue;
        };
        for segments in paths_in(&without_inline_modules(&code)) {
            read += 1;
            let from_crate = segments.first().is_some_and(|s| s == "crate");
            let named = |s: &str| segments.get(1).is_some_and(|n| n == s);
            if segments[0] == "actix_web" || (from_crate && (named("error") || named("http"))) {
                found.push(format!("{}: {}", path.display(), segments.join("::")));
            }
        }
    }
    assert!(
        read > 1000,
        "only {read} paths read: the reader lost its way"
    );
    assert!(
        found.is_empty(),
        "services that know of HTTP:\n{}",
        found.join("\n")
    );
}

/// One clock: the system's time is read in `domain::clock::now` alone (`db::now` and
/// `Clock::now_in` read it there), so that every part of coe sees one moment's source.
#[test]
fn the_system_clock_is_read_in_one_place() {
    let mut found = Vec::new();
    for (path, text) in sources(&src()) {
        let Some(code) = code_outside_tests(&path, &text) else {
            continue;
        };
        if path.ends_with("domain/clock.rs") || path.ends_with("architecture_tests.rs") {
            continue;
        }
        for (n, line) in code.lines().enumerate() {
            if line.contains("Utc::now()") || line.contains("Local::now()") {
                found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the system clock read outside domain::clock::now:\n{}",
        found.join("\n")
    );
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

/// A COE's state is written by `services::coe::lifecycle` alone (its moves are the life
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
        [src()
            .join("services/coe/lifecycle.rs")
            .display()
            .to_string()],
        "coes.state written outside services::coe::lifecycle"
    );
}

/// What docs/architecture.md names in backticks and where it should be.
fn architecture_page() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
        .expect("docs/architecture.md")
}

fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// Whether a file or folder of this name is anywhere under `dir`.
fn named_somewhere(dir: &Path, name: &str) -> bool {
    let name = name.trim_end_matches('/');
    std::fs::read_dir(dir).expect("a folder").any(|entry| {
        let path = entry.expect("an entry").path();
        path.file_name().is_some_and(|n| n == name)
            || (path.is_dir() && named_somewhere(&path, name))
    })
}

/// The file a module path names (`services::figures::stats::inspect` is
/// `src/services/figures/stats/inspect.rs`), and the segments left after it (an item in it).
fn module_file(path: &str) -> Option<(PathBuf, Vec<&str>)> {
    let segments: Vec<&str> = path.trim_start_matches("crate::").split("::").collect();
    let mut found = None;
    let mut dir = src();
    for (i, segment) in segments.iter().enumerate() {
        let file = dir.join(format!("{segment}.rs"));
        let module = dir.join(segment).join("mod.rs");
        if file.exists() {
            found = Some((file, i + 1));
        } else if module.exists() {
            found = Some((module, i + 1));
        } else {
            break;
        }
        dir = dir.join(segment);
    }
    found.map(|(file, used)| (file, segments[used..].to_vec()))
}

/// Every file, folder and module docs/architecture.md names exists, and every item
/// it names in a module is in that module's file; every table it lists is in the
/// schema. (Four of eight claims checked in its last version were false.)
#[test]
fn the_architecture_page_names_what_exists() {
    let page = architecture_page();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let modules = [
        "architecture_tests",
        "chat",
        "cli",
        "config",
        "db",
        "demo",
        "domain",
        "email",
        "http",
        "ingest",
        "jobs",
        "services",
        "trackers",
    ];
    let (mut checked, mut wrong) = (0, Vec::new());
    for token in backticked(&page) {
        if token.contains(' ') || token.starts_with('/') || token.starts_with('-') {
            continue;
        }
        if token.contains("::") {
            let first = token
                .trim_start_matches("crate::")
                .split("::")
                .next()
                .unwrap_or_default();
            if !modules.contains(&first) {
                continue;
            }
            checked += 1;
            match module_file(token) {
                Some((file, rest)) if rest.len() <= 2 => {
                    let text = std::fs::read_to_string(&file).expect("a module");
                    if let Some(missing) = rest.iter().find(|item| !text.contains(**item)) {
                        wrong.push(format!("`{token}`: {missing} is not in {}", file.display()));
                    }
                }
                _ => wrong.push(format!("`{token}`: no such module")),
            }
        } else if token.contains('/')
            || [".rs", ".md", ".sql", ".mjs"]
                .iter()
                .any(|e| token.ends_with(e))
        {
            checked += 1;
            // A path from the project's root, or a name found under `src/`.
            let exists = if token.trim_end_matches('/').contains('/') {
                root.join(token).exists()
            } else {
                named_somewhere(&src(), token)
            };
            if !exists {
                wrong.push(format!("`{token}`: no such file or folder"));
            }
        }
    }
    // The data model's tables.
    // `db/schema.rs` and the files of its submodules (`db/schema/`).
    let mut schema = std::fs::read_to_string(src().join("db/schema.rs")).expect("the schema");
    for (_, text) in sources(&src().join("db/schema")) {
        schema.push_str(&text);
    }
    let model = page
        .split("## Data model")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a data model section");
    for row in model.lines().filter(|l| l.starts_with("| `")) {
        let first_cell = row.split('|').nth(1).unwrap_or_default();
        for table in backticked(first_cell) {
            checked += 1;
            if !schema.contains(&format!("    {table} (")) {
                wrong.push(format!("table `{table}` is not in the schema"));
            }
        }
    }
    assert!(
        checked > 60,
        "only {checked} names checked: the reader lost its way"
    );
    assert!(
        wrong.is_empty(),
        "docs/architecture.md is wrong:\n{}",
        wrong.join("\n")
    );
    let lines = page.lines().count();
    assert!(
        lines <= 250,
        "docs/architecture.md has {lines} lines; a newcomer reads 250"
    );
}

/// The checks on who the caller is live in `services::access`: no service or handler
/// reads the caller's admin flag, compares the caller's address or asks whether a
/// person answers, outside it (the places that make an `Acting` from a session or a
/// token, and those that hand `access` the caller's role, are what remain).
#[test]
fn checks_on_the_caller_live_in_access() {
    let needles = [
        "who.email.filter(",
        "who.principal.contains(",
        "who.is_admin",
        "who.email ==",
        "who.email, dotless",
        "who.principal, dotless",
        "Some(who.principal)",
        "== who.email",
        "caller.email.as_deref() !=",
        "caller.email.as_deref() ==",
        "role != Role::Admin",
        "domain::action::may_verify(",
    ];
    let (mut in_access, mut found) = (0, Vec::new());
    for dir in ["services", "http"] {
        for (path, text) in sources(&src().join(dir)) {
            let Some(code) = code_outside_tests(&path, &text) else {
                continue;
            };
            for (n, line) in code.lines().enumerate() {
                let hit = needles.iter().find(|needle| line.contains(**needle));
                let Some(needle) = hit else {
                    continue;
                };
                if path.ends_with("services/access.rs") {
                    in_access += 1;
                } else {
                    found.push(format!("{}:{}: {needle}", path.display(), n + 1));
                }
            }
        }
    }
    assert!(
        in_access >= 3,
        "the reader found no check even in access.rs"
    );
    assert!(
        found.is_empty(),
        "checks on the caller outside services::access:\n{}",
        found.join("\n")
    );
}

/// The modules of `src/http` by path (`http::pages::coes`), each with the modules of
/// `src/http` it names: through `crate::http::…`, `super::…` and `self::…`, and, in a
/// folder's `mod.rs`, its children by name. Tests, comments and inline modules are left
/// out (an inline module's `super` is its own file).
fn http_import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = src().join("http");
    let module_of = |path: &Path| -> Vec<String> {
        let relative = path.strip_prefix(&root).expect("under src/http");
        let mut parts: Vec<String> = vec!["http".into()];
        parts.extend(relative.components().map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned()
        }));
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        parts
    };
    let files: Vec<(Vec<String>, bool, String)> = sources(&root)
        .into_iter()
        .filter_map(|(path, text)| {
            let code = code_outside_tests(&path, &text)?;
            let is_folder = path.file_name().is_some_and(|n| n == "mod.rs");
            let code: String = code
                .lines()
                .map(|line| line.split("//").next().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n");
            Some((module_of(&path), is_folder, without_inline_modules(&code)))
        })
        .collect();
    let modules: BTreeSet<String> = files.iter().map(|(m, _, _)| m.join("::")).collect();
    // The longest module that `segments` starts with.
    let module_in = |segments: &[String]| -> Option<String> {
        (1..=segments.len())
            .rev()
            .map(|n| segments[..n].join("::"))
            .find(|m| modules.contains(m))
    };
    let mut graph = BTreeMap::new();
    for (module, is_folder, code) in &files {
        let name = module.join("::");
        let mut named = BTreeSet::new();
        for path in paths_in(code) {
            let mut base: Vec<String> = match path[0].as_str() {
                "crate" => Vec::new(),
                "self" => module.clone(),
                "super" => module[..module.len() - 1].to_vec(),
                _ if *is_folder => module.clone(),
                _ => continue,
            };
            let mut rest =
                &path[usize::from(path[0] == "crate" || path[0] == "self" || path[0] == "super")..];
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            if let Some(target) = module_in(&base) {
                if target != name && target.starts_with("http") {
                    named.insert(target);
                }
            }
        }
        graph.insert(name, named);
    }
    graph
}

/// `code` without its inline modules (`mod ids { … }`).
fn without_inline_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("mod ") {
        let (before, after) = rest.split_at(at);
        let name_end = after[4..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(after.len(), |n| n + 4);
        let opens = after[name_end..].trim_start().starts_with('{');
        let word_start = before
            .chars()
            .last()
            .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_');
        if !(opens && word_start) {
            out.push_str(&rest[..at + 4]);
            rest = &rest[at + 4..];
            continue;
        }
        out.push_str(before);
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Every path in `code` (`a::b::c`, and `a::{b, c::d}` as `a::b` and `a::c::d`), as
/// its segments; a path's first segment is not preceded by `::`.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let bytes: Vec<char> = code.chars().collect();
    let mut paths = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts =
            is_ident(bytes[i]) && (i == 0 || (!is_ident(bytes[i - 1]) && bytes[i - 1] != ':'));
        if !starts {
            i += 1;
            continue;
        }
        let mut segments = Vec::new();
        let mut j = i;
        loop {
            let from = j;
            while j < bytes.len() && is_ident(bytes[j]) {
                j += 1;
            }
            segments.push(bytes[from..j].iter().collect::<String>());
            let more = bytes.get(j) == Some(&':') && bytes.get(j + 1) == Some(&':');
            if !more {
                break;
            }
            j += 2;
            if bytes.get(j) == Some(&'{') {
                let close = bytes[j..]
                    .iter()
                    .position(|&c| c == '}')
                    .map_or(bytes.len(), |n| j + n);
                let group: String = bytes[j + 1..close].iter().collect();
                for item in group.split(',') {
                    let item: Vec<String> = item
                        .trim()
                        .split(" as ")
                        .next()
                        .unwrap_or_default()
                        .split("::")
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty() && s != "self")
                        .collect();
                    let mut path = segments.clone();
                    path.extend(item);
                    paths.push(path);
                }
                j = close;
                segments.clear();
                break;
            }
            if !bytes.get(j).copied().is_some_and(is_ident) {
                break;
            }
        }
        if segments.len() > 1 {
            paths.push(segments);
        }
        i = j.max(i + 1);
    }
    paths
}

/// A circle in `graph`, as the path that closes it, if there is one.
pub(crate) fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

/// The HTTP layer imports as a tree: the pages' route table (`pages/mod.rs`) reaches
/// every handler and no handler reaches back; the kit (`pages::kit`, `error`,
/// `templates`) reaches no handler; `state` names no module that reaches `state`.
/// The API's route table and its OpenAPI document share one macro, and are the one
/// pair allowed to name each other.
#[test]
fn http_imports_have_no_circle() {
    let mut graph = http_import_graph();
    // The reader must see the known edges, or this test would pass on nothing.
    for (from, to) in [
        ("http::pages", "http::pages::coes"),
        ("http::pages::coes", "http::pages::kit"),
        ("http::pages::kit", "http::state"),
        ("http::pages::coe_forms", "http::pages::guard"),
        ("http::state", "http::pages::templates"),
        ("http::routes", "http::openapi"),
    ] {
        assert!(
            graph[from].contains(to),
            "{from} → {to} not seen: {graph:#?}"
        );
    }
    graph
        .get_mut("http::openapi")
        .expect("http::openapi")
        .remove("http::routes");
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "src/http imports in a circle: {}\nthe whole graph: {graph:#?}",
            cycle.join(" → ")
        );
    }
}

#[test]
fn the_import_reader_sees_paths_groups_and_no_inline_modules() {
    let code = "use super::{kit::render, error::PageError as E};\nlet x = crate::http::state::with_conn(a::b);\n\
                pub mod ids { use super::IdOf; }\nfn f() {}";
    let code = without_inline_modules(code);
    assert!(!code.contains("IdOf") && code.contains("fn f()"), "{code}");
    let paths = paths_in(&code);
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        joined,
        [
            "super::kit::render",
            "super::error::PageError",
            "crate::http::state::with_conn",
            "a::b"
        ]
    );
}
