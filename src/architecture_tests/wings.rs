//! `src/services` is grouped in wings that show the product, and the wings import
//! each other in one direction (docs/architecture.md, "The wings"). The check parses
//! every module with `syn` and resolves each path it names (`use` trees, paths in
//! types and expressions, `crate::`, `super::`, `self::`), so a rename or an alias
//! cannot hide an import from it. Test code (`tests.rs`, `mod tests`) is not read:
//! a test may set up what it needs from any wing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use syn::visit::Visit;

use super::{find_cycle, sources, src};

/// The shared leaves at the root of `src/services`: any wing may use them, they use
/// no wing.
const LEAVES: &[&str] = &[
    "access",
    "audit",
    "connections",
    "env",
    "forms",
    "replicas",
    "search_index",
    "sweep_settings",
];

/// The wings, lowest first: a wing may import the leaves and the wings before it.
const WINGS: &[&str] = &[
    "directory",
    "outbound",
    "incidents",
    "coe",
    "intake",
    "figures",
    "accounts",
    "reminders",
    "from_chat",
];

/// The module path of a file under `src/`: `services/coe/coes/edit.rs` is
/// `services::coe::coes::edit`, a `mod.rs` its folder's module.
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_owned());
    }
    parts
}

/// Every path a file names, resolved against the module it sits in (and the inline
/// modules around each path): `crate::` from the root, `super::` one up, `self::`
/// here; a path starting with `services` is the crate's, and one starting with a
/// name a `use` gave to a path of the crate (`use crate::services as s;`) is that path.
struct Paths {
    module: Vec<String>,
    found: Vec<Vec<String>>,
    aliases: BTreeMap<String, Vec<String>>,
}

impl Paths {
    fn new(module: Vec<String>) -> Paths {
        Paths {
            module,
            found: Vec::new(),
            aliases: BTreeMap::new(),
        }
    }

    fn add(&mut self, segments: Vec<String>) {
        if let Some(path) = self.resolve(&segments) {
            self.found.push(path);
        }
    }

    /// `segments` from the crate's root, when they name something of the crate.
    fn resolve(&self, segments: &[String]) -> Option<Vec<String>> {
        let mut here = self.module.clone();
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                here.clear();
                rest = &rest[1..];
            }
            Some("services") => here.clear(),
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().is_some_and(|s| s == "super") {
                    here.pop();
                    rest = &rest[1..];
                }
            }
            Some(name) => {
                here = self.aliases.get(name)?.clone();
                rest = &rest[1..];
            }
            None => return None,
        }
        here.extend(rest.iter().cloned());
        Some(here)
    }

    /// Keeps the name a `use` gives to a path of the crate, for the paths after it.
    fn alias(&mut self, name: String, full: &[String]) {
        if let Some(path) = self.resolve(full) {
            self.aliases.insert(name, path);
        }
    }

    /// The paths in a macro's tokens (`json!`, `tracing::info!`, `macro_rules!`
    /// bodies with `$crate::…`): every run of names joined by `::`.
    fn scan(&mut self, tokens: proc_macro2::TokenStream) {
        use proc_macro2::TokenTree;
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        for tree in tokens {
            match tree {
                TokenTree::Punct(p) if p.as_char() == ':' && !run.is_empty() => colons += 1,
                TokenTree::Ident(ident) => {
                    if colons != 2 {
                        self.add(std::mem::take(&mut run));
                    }
                    colons = 0;
                    run.push(ident.to_string());
                }
                TokenTree::Group(group) => {
                    self.add(std::mem::take(&mut run));
                    colons = 0;
                    self.scan(group.stream());
                }
                TokenTree::Punct(_) | TokenTree::Literal(_) => {
                    self.add(std::mem::take(&mut run));
                    colons = 0;
                }
            }
        }
        self.add(run);
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                if n.ident != "self" {
                    full.push(n.ident.to_string());
                }
                if let Some(name) = full.last().cloned() {
                    self.alias(name, &full);
                }
                self.add(full);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                self.alias(r.rename.to_string(), &full);
                self.add(full);
            }
            syn::UseTree::Glob(_) => self.add(prefix.clone()),
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(prefix, item);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.add(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        // The order holds for the code that runs; a test may set up what it needs.
        if item.ident == "tests" {
            return;
        }
        self.module.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.module.pop();
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // A macro's arguments are tokens, whatever they parse as.
        self.scan(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

/// Which part of `src/services` a module path falls in: a wing, a leaf, or `None`
/// (outside the services, or their root module).
fn part_of(path: &[String]) -> Option<&str> {
    match path {
        [services, part, ..] if services == "services" => Some(part.as_str()),
        _ => None,
    }
}

/// Which module of `src/services` a path falls in: a leaf, or a wing's module
/// (`coe::coes`); a wing's own root is the wing.
fn module_in(path: &[String]) -> Option<String> {
    let part = part_of(path)?;
    if !WINGS.contains(&part) {
        // `services::{Env, Runtime}` are `services::env`'s, re-exported.
        let leaf = if ["Env", "Runtime"].contains(&part) {
            "env"
        } else {
            part
        };
        return Some(leaf.to_owned());
    }
    Some(match path.get(2) {
        Some(module)
            if module
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_lowercase()) =>
        {
            format!("{part}::{module}")
        }
        _ => part.to_owned(),
    })
}

/// The wing (or leaf) each wing (or leaf) of `src/services` names.
fn wing_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, used) in module_graph() {
        let wing = |m: &str| m.split("::").next().unwrap_or(m).to_owned();
        let entry = graph.entry(wing(&from)).or_default();
        entry.extend(used.iter().map(|m| wing(m)).filter(|m| *m != wing(&from)));
    }
    graph
}

/// The modules (as `module_in` names them) each module of `src/services` names.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = src();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in sources(&root.join("services")) {
        if path.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let module = module_of(path.strip_prefix(&root).expect("under src"));
        let Some(from) = module_in(&module) else {
            continue;
        };
        let file = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
        let mut paths = Paths::new(module);
        paths.visit_file(&file);
        let used = graph.entry(from.clone()).or_default();
        for found in &paths.found {
            if let Some(to) = module_in(found).filter(|to| *to != from) {
                used.insert(to);
            }
        }
    }
    graph
}

#[test]
fn the_path_reader_resolves_crate_super_self_groups_aliases_and_macros() {
    let file: syn::File = syn::parse_str(
        "use crate::services::{coe::coes as writeups, audit};\n\
         use super::people;\n\
         use crate::services as s;\n\
         fn f() { let _ = super::super::access::check(); format!(\"{}\", self::x::y()); }\n\
         fn g() { s::reminders::sweep(); json!({\"a\": crate::services::figures::board::x()}); }\n\
         macro_rules! m { () => { $crate::services::intake::report::report() }; }\n\
         mod tests { use super::*; }",
    )
    .expect("parses");
    let mut paths = Paths::new(vec!["services".into(), "directory".into(), "tokens".into()]);
    paths.visit_file(&file);
    let found: Vec<String> = paths.found.iter().map(|p| p.join("::")).collect();
    for expected in [
        "services::coe::coes",
        "services::audit",
        "services::directory::people",
        "services::access::check",
        "services::directory::tokens::x::y",
        "services::reminders::sweep",
        "services::figures::board::x",
        "services::intake::report::report",
    ] {
        assert!(found.iter().any(|f| f == expected), "{expected}: {found:?}");
    }
    assert!(
        !found.iter().any(|f| f == "services::directory::tokens"),
        "a test module is not read: {found:?}"
    );
}

#[test]
fn services_are_wings_and_shared_leaves() {
    let mut listed: Vec<String> = std::fs::read_dir(src().join("services"))
        .expect("src/services")
        .map(|e| {
            let name = e.expect("an entry").file_name();
            name.to_string_lossy().trim_end_matches(".rs").to_owned()
        })
        .filter(|name| name != "mod")
        .collect();
    listed.sort();
    let mut expected: Vec<String> = LEAVES.iter().chain(WINGS).map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(
        listed, expected,
        "src/services holds the wings and the leaves only"
    );
}

#[test]
fn wings_import_each_other_in_one_direction() {
    let graph = wing_graph();
    // The reader must see the known edges, or this test would pass on nothing.
    for (from, to) in [
        ("coe", "outbound"),
        ("intake", "coe"),
        ("reminders", "figures"),
    ] {
        assert!(graph[from].contains(to), "{from} → {to} unseen: {graph:#?}");
    }
    let mut wrong = Vec::new();
    for (from, used) in &graph {
        let rank = WINGS.iter().position(|w| w == from);
        for to in used {
            let allowed = match (rank, WINGS.iter().position(|w| w == to)) {
                // A leaf uses leaves only; a wing the leaves and the wings below it.
                (None, None) => LEAVES.contains(&to.as_str()),
                (None, Some(_)) => false,
                (Some(_), None) => LEAVES.contains(&to.as_str()),
                (Some(a), Some(b)) => b < a,
            };
            if !allowed {
                wrong.push(format!("{from} → {to}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the wings' order ({WINGS:?}, leaves {LEAVES:?}): {wrong:?}"
    );
    let leaves: BTreeMap<String, BTreeSet<String>> = graph
        .into_iter()
        .filter(|(from, _)| LEAVES.contains(&from.as_str()))
        .collect();
    assert_eq!(find_cycle(&leaves), None, "the leaves import in a circle");
}

/// Inside the wings too, the modules import as a tree.
#[test]
fn no_module_of_the_services_imports_in_a_circle() {
    let graph = module_graph();
    assert!(graph["intake::ingest"].contains("coe::coes"), "{graph:#?}");
    assert!(
        graph["coe::review"].contains("coe::lifecycle"),
        "{graph:#?}"
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!("services/ imports in a loop: {}", cycle.join(" → "));
    }
}
