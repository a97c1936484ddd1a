//! Use cases. Each public function is one transaction over a connection; HTTP
//! handlers and the command line call these, never diesel directly.
//!
//! The modules import each other as a tree (checked by `tests::no_import_cycles`):
//! `ingest → coes → outbound`; `review → coes, actions, lifecycle, outbound`;
//! `reminders → stats, outbound`. `outbound` is the wing of what leaves coe: a use
//! case says what happened (`outbound::happened`) and the spine there makes its
//! emails, chat notices, tracker jobs and history; `audit`, `access`, `lifecycle`
//! and `people` are leaves every writer may use.

pub mod access;
pub mod actions;
pub mod audit;
pub mod auth;
pub mod board;
pub mod calendar;
pub mod coes;
pub mod coverage;
mod env;
pub mod export;
pub mod forms;
pub mod incidents;
pub mod ingest;
pub mod leaving;
pub mod lifecycle;
pub mod meeting;
pub mod notifications;
pub mod outbound;
pub mod ownership;
pub mod people;
pub mod publishing;
pub mod reminders;
pub mod replicas;
pub mod report;
pub mod retention;
pub mod review;
pub mod scim;
pub mod search_index;
pub mod sns;
pub mod stats;
pub mod sweep_settings;
pub mod templates;
pub mod tokens;
pub mod trackers;
pub mod work;

pub use env::Env;

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    use crate::architecture_tests::find_cycle;

    /// The services each module of `src/services/` names (`services::x`, or
    /// `services::{x, y as z}`), by module: `services/coes/edit.rs` counts as `coes`.
    fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/services");
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("src/services is readable") {
                let path = entry.expect("a directory entry").path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let relative = path.strip_prefix(&root).expect("under src/services");
                let first = relative
                    .components()
                    .next()
                    .map(|c| {
                        c.as_os_str()
                            .to_string_lossy()
                            .trim_end_matches(".rs")
                            .to_owned()
                    })
                    .unwrap_or_default();
                if first == "mod" {
                    continue;
                }
                let text = std::fs::read_to_string(&path).expect("a readable source file");
                let mut names = names_after(&text, "services::");
                // In `services/x.rs`, `super::y` is the service `y` too.
                if relative.components().count() == 1 {
                    names.extend(names_after(&text, "super::"));
                }
                let used = graph.entry(first.clone()).or_default();
                for name in names {
                    if name != first {
                        used.insert(name);
                    }
                }
            }
        }
        graph
    }

    /// The module names right after each `marker` in `text`.
    fn names_after(text: &str, marker: &str) -> Vec<String> {
        let ident = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        };
        let mut names = Vec::new();
        for (i, _) in text.match_indices(marker) {
            let rest = &text[i + marker.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                names.extend(group.split(',').map(|item| ident(item.trim())));
            } else {
                names.push(ident(rest));
            }
        }
        names.retain(|n| !n.is_empty() && n != "self" && n != "super");
        names
    }

    #[test]
    fn the_import_reader_sees_groups_and_renames() {
        let text = "use crate::services::{lifecycle, people as directory};\n\
                    crate::services::outbound::happened(conn);\nuse crate::services::coes::{self, X};";
        assert_eq!(
            names_after(text, "services::"),
            ["lifecycle", "people", "outbound", "coes"]
        );
        let mut looped = BTreeMap::new();
        looped.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
        looped.insert("b".to_owned(), BTreeSet::from(["a".to_owned()]));
        assert_eq!(
            find_cycle(&looped),
            Some(vec!["a".into(), "b".into(), "a".into()])
        );
    }

    #[test]
    fn no_import_cycles() {
        let graph = import_graph();
        // The reader must see the known edges, or this test would pass on nothing.
        assert!(graph["ingest"].contains("coes"), "{graph:?}");
        assert!(graph["review"].contains("lifecycle"), "{graph:?}");
        assert!(graph["export"].contains("coes"), "{graph:?}");
        if let Some(cycle) = find_cycle(&graph) {
            panic!(
                "services/ imports in a loop: {}\nthe whole graph: {graph:#?}",
                cycle.join(" → ")
            );
        }
    }
}
