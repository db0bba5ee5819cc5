//! The `porch-variants` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

mod fmt;

/// porch-variants: Porch's PackageVariant and PackageVariantSet controllers,
/// with all package editing in one WebAssembly component.
#[derive(Debug, Parser)]
#[command(name = "porch-variants", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Rewrite KRM YAML files exactly as kpt and Porch write them
    /// (kyaml style: 2-space indent, compact sequences, comments kept).
    Fmt {
        /// Report files that would change and exit 1, without writing.
        #[arg(long)]
        check: bool,
        /// Files or directories (searched for *.yaml, *.yml and Kptfile).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Fmt { check, paths } => fmt::run(&paths, check),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
