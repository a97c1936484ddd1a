//! Each rule has one home (docs/architecture.md, "Where each rule lives"). The checks
//! parse the sources with `syn`, so they see an expression, not a needle.

use std::path::Path;

use syn::visit::Visit;

use super::{sources, src};

/// The names a due date goes by in the code.
fn is_due(expr: &syn::Expr) -> bool {
    let name = match expr {
        syn::Expr::Field(f) => match &f.member {
            syn::Member::Named(ident) => ident.to_string(),
            syn::Member::Unnamed(_) => return false,
        },
        syn::Expr::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        syn::Expr::Unary(u) => return is_due(&u.expr),
        syn::Expr::Reference(r) => return is_due(&r.expr),
        syn::Expr::Paren(p) => return is_due(&p.expr),
        _ => return false,
    };
    name == "due" || name == "due_date"
}

/// Whether `expr` speaks of today: `today`, `&today`, `clock.today()`, `self.today`.
fn is_today(expr: &syn::Expr) -> bool {
    use quote::ToTokens;
    expr.to_token_stream().to_string().contains("today")
}

/// Where a file compares a due date with a day: `due < today`, `today > a.due`,
/// `due_date.lt(today)`, `due_date.lt(clock.today())`, `today.gt(&a.due)`, or SQL text
/// with `due_date <`. Inside macros, only arguments that parse as expressions are read.
#[derive(Default)]
struct DueComparisons {
    found: Vec<String>,
}

impl<'ast> Visit<'ast> for DueComparisons {
    fn visit_expr_binary(&mut self, e: &'ast syn::ExprBinary) {
        use syn::BinOp::{Ge, Gt, Le, Lt};
        if matches!(e.op, Lt(_) | Gt(_) | Le(_) | Ge(_)) && (is_due(&e.left) || is_due(&e.right)) {
            self.found.push("a due date compared with < or >".into());
        }
        syn::visit::visit_expr_binary(self, e);
    }

    fn visit_expr_method_call(&mut self, e: &'ast syn::ExprMethodCall) {
        let compares = ["lt", "gt", "le", "ge"].contains(&e.method.to_string().as_str());
        let due_and_today = (is_due(&e.receiver) && e.args.iter().any(is_today))
            || (is_today(&e.receiver) && e.args.iter().any(is_due));
        if compares && due_and_today {
            self.found.push(format!("`due_date.{}(today)`", e.method));
        }
        syn::visit::visit_expr_method_call(self, e);
    }

    fn visit_lit_str(&mut self, lit: &'ast syn::LitStr) {
        let text = lit.value();
        if text.contains("due_date <") || text.contains("due_date >") {
            self.found.push("SQL comparing `due_date`".into());
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        // A test module may spell the rule out to check it.
        if item.ident != "tests" {
            syn::visit::visit_item_mod(self, item);
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        if let Ok(args) = mac.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        ) {
            for arg in &args {
                self.visit_expr(arg);
            }
        }
    }
}

fn due_comparisons(text: &str) -> Vec<String> {
    let file = syn::parse_file(text).expect("a source file parses");
    let mut seen = DueComparisons::default();
    seen.visit_file(&file);
    seen.found
}

#[test]
fn the_comparison_reader_sees_each_spelling() {
    let found = due_comparisons(
        "fn f() { if a.due < today {} let _ = today > due; \
         q.filter(corrective_actions::due_date.lt(today)); \
         q.filter(corrective_actions::due_date.ge(clock.today())); let _ = today.gt(&a.due); \
         format!(\"WHERE c.due_date < {}\", x); }\n\
         #[cfg(test)] mod tests { fn g() { let _ = a.due < today; } }",
    );
    assert_eq!(found.len(), 6, "{found:?}");
}

/// "Overdue" is decided in `domain::action` (`is_overdue`, `past_due`) and spelled in
/// SQL by its twin in `db::rules` alone; everything else in `src/` asks them. The
/// migrations' triggers and the `action_tally_counted` view spell it in SQL too (a
/// migration cannot call the code): tests/api/overdue.rs holds them and the rule to
/// one table of cases on both databases. Test code (`tests.rs`, `mod tests`) may
/// spell it out to check it.
#[test]
fn overdue_is_decided_in_one_place_and_its_sql_twin() {
    let root = src();
    let homes = [Path::new("domain/action.rs"), Path::new("db/rules.rs")];
    let mut wrong = Vec::new();
    for (path, text) in sources(&root) {
        let relative = path.strip_prefix(&root).expect("under src");
        let test_file = path.file_name().is_some_and(|n| n == "tests.rs");
        if homes.contains(&relative) || relative.starts_with("architecture_tests") || test_file {
            continue;
        }
        for found in due_comparisons(&text) {
            wrong.push(format!("{}: {found}", relative.display()));
        }
    }
    assert!(
        wrong.is_empty(),
        "overdue spelled outside domain::action and db::rules: {wrong:#?}"
    );
}

/// Where functions take the whole settings (`Settings`, `&Settings`,
/// `Arc<Settings>`) as a parameter, by name.
#[derive(Default)]
struct SettingsParameters {
    found: Vec<String>,
}

impl SettingsParameters {
    fn check(&mut self, sig: &syn::Signature) {
        use quote::ToTokens;
        for input in &sig.inputs {
            if let syn::FnArg::Typed(arg) = input {
                let ty = arg.ty.to_token_stream().to_string();
                let names_settings = ty
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|word| word == "Settings");
                if names_settings {
                    self.found.push(format!("fn {}(… {ty} …)", sig.ident));
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for SettingsParameters {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.check(&f.sig);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.check(&f.sig);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if item.ident != "tests" {
            syn::visit::visit_item_mod(self, item);
        }
    }
}

fn settings_parameters(text: &str) -> Vec<String> {
    let file = syn::parse_file(text).expect("a source file parses");
    let mut seen = SettingsParameters::default();
    seen.visit_file(&file);
    seen.found
}

#[test]
fn the_settings_reader_sees_each_spelling() {
    let found = settings_parameters(
        "fn a(s: &Settings) {} fn b(s: &'a crate::config::Settings) {} \
         fn c(s: Arc<Settings>) {} fn d(env: Env<'_>, c: &ChannelSettings) {} \
         impl X { fn e(&self, s: &Settings) {} }\n\
         #[cfg(test)] mod tests { fn f(s: &Settings) {} }",
    );
    assert_eq!(found.len(), 4, "{found:?}");
}

/// `Env` is the one way the settings reach a service: no function in
/// `src/services` takes them whole (`services::env` builds `Env` from them, and
/// `services::connections` the connections it carries). A part
/// a function reads alone (`&ChannelSettings`, `&TrackerSettings`) may be passed.
#[test]
fn settings_reach_the_services_through_env_alone() {
    let root = src().join("services");
    let mut wrong = Vec::new();
    for (path, text) in sources(&root) {
        let relative = path.strip_prefix(&root).expect("under services");
        let test_file = path.file_name().is_some_and(|n| n == "tests.rs");
        let builds_env = ["env.rs", "connections.rs"]
            .map(Path::new)
            .contains(&relative);
        if builds_env || test_file {
            continue;
        }
        for found in settings_parameters(&text) {
            wrong.push(format!("{}: {found}", relative.display()));
        }
    }
    assert!(
        wrong.is_empty(),
        "services taking the settings other than through Env: {wrong:#?}"
    );
}
