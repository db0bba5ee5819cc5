//! The `porch-variants` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

mod component_cmd;
mod fmt;

/// porch-variants: Porch's controllers (PackageVariant, PackageVariantSet,
/// and the v1alpha2 PackageRevision and Repository controllers) with all
/// package editing in one WebAssembly component. `local` runs them on a
/// directory of Git repositories, `controller` against a cluster; `rpkg`
/// and `repo` work with package revisions and repositories as porchctl
/// does; `fn render` renders a
/// package as kpt does.
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
    /// Reconcile a local directory (PackageVariants, PackageVariantSets,
    /// Repositories as YAML; repositories as Git repos under repos/) to a
    /// fixed point and print what was done.
    Local(porch_variants::local::cli::LocalArgs),
    /// Package revisions of a local directory, in the spirit of
    /// `porchctl rpkg`.
    Rpkg {
        #[command(flatten)]
        on: OnDir,
        #[command(subcommand)]
        command: porch_variants::local::cli::RpkgCommand,
    },
    /// Repositories of a local directory, as `porchctl repo` registers,
    /// lists and unregisters them.
    Repo {
        #[command(flatten)]
        on: OnDir,
        #[command(subcommand)]
        command: porch_variants::local::repo_cmd::RepoCommand,
    },
    /// The embedded package-editing component.
    Component {
        #[command(subcommand)]
        command: component_cmd::ComponentCommand,
    },
    /// Run the PackageVariant and PackageVariantSet controllers against a
    /// Kubernetes cluster with Porch (JSON logs).
    Controller(porch_variants::kube::run::ControllerArgs),
    /// Print the CRDs (YAML): PackageVariant and PackageVariantSet, and
    /// the v1alpha2 PackageRevision and Repository the PackageRevision
    /// controller needs (a cluster with Porch has those two already:
    /// `--for variants`). The same as deploy/crds.
    Crds {
        /// Which CRDs.
        #[arg(long = "for", value_enum, default_value_t = CrdSet::All)]
        set: CrdSet,
    },
    /// KRM functions: `fn render` runs a package's pipeline, as
    /// `kpt fn render` does; `fn eval` runs one function, as `kpt fn eval`.
    Fn {
        #[command(subcommand)]
        command: FnCommand,
    },
}

/// Where and how `rpkg` and `repo` work, before or after their verb.
#[derive(Debug, clap::Args)]
struct OnDir {
    /// The local directory.
    #[arg(long, default_value = ".", global = true)]
    dir: PathBuf,
    /// Namespace of the objects.
    #[arg(long, short = 'n', default_value = "default", global = true)]
    namespace: String,
    /// Output format.
    #[arg(long, short = 'o', value_enum, global = true,
          default_value_t = porch_variants::local::cli::RpkgOutput::Text)]
    output: porch_variants::local::cli::RpkgOutput,
    /// How the directory's objects are read, as kubectl's `--validate`
    /// (strict, warn, ignore).
    #[arg(long, value_enum, global = true, value_name = "MODE",
          default_value_t = porch_variants::local::Validation::Strict)]
    validate: porch_variants::local::Validation,
}

/// Which CRDs `crds` prints.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum CrdSet {
    /// All four.
    All,
    /// PackageVariant and PackageVariantSet.
    Variants,
    /// The v1alpha2 PackageRevision and the Repository.
    Packagerevisions,
}

#[derive(Debug, Subcommand)]
enum FnCommand {
    /// Render a package in place: run its Kptfile pipelines (subpackages
    /// first), write the resources back and the root Kptfile's status.
    Render(porch_variants::fn_render::RenderArgs),
    /// Run one function over a package's resources in place, as
    /// `kpt fn eval` does (`--image` or `--exec`, `--fn-config` or
    /// `-- key=value`, `--match-*`/`--exclude-*`).
    Eval(Box<porch_variants::fn_render::eval::EvalArgs>),
}

fn local_cmd(args: &porch_variants::local::cli::LocalArgs) -> anyhow::Result<ExitCode> {
    use porch_variants::local::cli::{print_text, run_local, Output};
    if args.dry_run {
        use porch_variants::local::dry_run;
        let (plan, ok) = dry_run::run_dry(args)?;
        match args.output {
            Output::Text => dry_run::print_text(&plan, &args.dir),
            Output::Json => porch_variants::outln!("{}", serde_json::to_string_pretty(&plan)?),
        }
        return Ok(ExitCode::from(plan.summary.exit_code(ok)));
    }
    let (summary, ok) = run_local(args)?;
    match args.output {
        Output::Text => print_text(&summary),
        Output::Json => porch_variants::outln!("{}", serde_json::to_string_pretty(&summary)?),
    }
    Ok(ExitCode::from(summary.exit_code(ok)))
}

fn controller_cmd(args: porch_variants::kube::run::ControllerArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(porch_variants::kube::run::run(args))?;
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    if matches!(cli.command, Command::Controller(_)) {
        tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init();
    } else {
        // Colours only for a person at a terminal, and never with NO_COLOR
        // (https://no-color.org).
        use std::io::IsTerminal;
        let colour = std::io::stderr().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(colour)
            .init();
    }
    let result = match cli.command {
        Command::Fmt { check, paths } => fmt::run(&paths, check),
        Command::Component { command } => component_cmd::run(command),
        Command::Controller(args) => controller_cmd(args),
        Command::Crds { set } => porch_variants::crd::yaml_of(match set {
            CrdSet::All => {
                let mut all = porch_variants::crd::all();
                all.extend(porch_variants::crd::package_revision_crds());
                all
            }
            CrdSet::Variants => porch_variants::crd::all(),
            CrdSet::Packagerevisions => porch_variants::crd::package_revision_crds(),
        })
        .map(|y| {
            porch_variants::outln!("{}", y.trim_end_matches('\n'));
            ExitCode::SUCCESS
        })
        .map_err(anyhow::Error::from),
        Command::Local(args) => local_cmd(&args),
        Command::Fn {
            command: FnCommand::Render(args),
        } => porch_variants::fn_render::run(&args),
        Command::Fn {
            command: FnCommand::Eval(args),
        } => porch_variants::fn_render::eval::run(&args),
        Command::Repo { on, command } => porch_variants::local::repo_cmd::run(
            &on.dir,
            &on.namespace,
            &command,
            on.output,
            on.validate,
        )
        .map(|()| ExitCode::SUCCESS)
        .map_err(anyhow::Error::from),
        Command::Rpkg { on, command } => porch_variants::local::cli::run_rpkg(
            &on.dir,
            &on.namespace,
            &command,
            on.output,
            on.validate,
        )
        .map(|()| ExitCode::SUCCESS)
        .map_err(anyhow::Error::from),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
