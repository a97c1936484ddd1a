use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = coe::cli::Cli::parse();
    coe::cli::run(cli)
}
