//! `porch-variants component ...`: facts about the embedded component.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use porch_variants::component::{self, CoreComponent};

/// Subcommands of `porch-variants component`.
#[derive(Debug, Subcommand)]
pub enum ComponentCommand {
    /// Print the embedded component's version, size, imports and exports.
    Info,
}

/// Runs a `component` subcommand.
pub fn run(command: ComponentCommand) -> Result<ExitCode> {
    match command {
        ComponentCommand::Info => info(),
    }
}

fn info() -> Result<ExitCode> {
    let core = CoreComponent::new()?;
    let version = core.version()?;
    let startup = core.startup();
    println!("version:  {version}");
    println!(
        "size:     {} bytes (core module before stripping: {} bytes)",
        startup.component_size,
        component::MODULE_SIZE
    );
    println!(
        "load:     {:.1} ms (compile, or load from the code cache, and pre-instantiate)",
        startup.load.as_secs_f64() * 1e3
    );
    let imports = core.imports();
    if imports.is_empty() {
        println!("imports:  none");
    } else {
        println!("imports:  {}", imports.join(", "));
    }
    println!("exports:");
    for export in core.exports() {
        println!(
            "  {}({}){}",
            export.name,
            export.params.join(", "),
            if export.returns { " -> …" } else { "" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
