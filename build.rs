//! Rebuilds when a migration or an email template changes: both are embedded in the
//! binary (`embed_migrations!`, `include_str!`), and cargo does not see new files in
//! those folders by itself.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-changed=templates");
}
