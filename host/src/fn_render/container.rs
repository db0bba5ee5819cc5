//! Functions run as containers, as kpt's default runtime runs them: the
//! image started with `docker` (or `podman`, `nerdctl`) `run --rm -i`, the
//! ResourceList on stdin, the output on stdout, with kpt's restrictions:
//! no network (`--network none`, unless `fn eval --network`), user
//! `nobody`, `no-new-privileges`, and only the mounts `fn eval --mount`
//! asks for.
//!
//! Which program runs the containers: `--container-runtime` (or kpt's
//! `KPT_FN_RUNTIME`): `docker`, `podman`, `nerdctl` or a path; by default
//! the first of `docker` and `podman` found on `PATH`. With none, the
//! runtime is absent and a function found nowhere else says so.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pv_core::render::RunOutput;

/// Container options of `fn render` and `fn eval`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ContainerArgs {
    /// The program that runs function images as containers: `docker`,
    /// `podman`, `nerdctl` or a path (default: `docker`, else `podman`, on
    /// PATH; `none`: no containers).
    #[arg(long, value_name = "PROGRAM", env = "KPT_FN_RUNTIME")]
    pub container_runtime: Option<String>,
}

/// How containers are started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerRuntime {
    /// The program (`docker`, `podman`, ...), resolved on PATH.
    pub program: PathBuf,
    /// Give the container the host's network (`fn eval --network`).
    pub network: bool,
    /// `--mount` values (`fn eval --mount`), passed as given.
    pub mounts: Vec<String>,
    /// How long a container may run.
    pub timeout: Duration,
}

impl ContainerRuntime {
    /// The runtime `args` name, or the first of docker and podman on
    /// `path` (a `PATH` value); `None` when there is none, or `none` was
    /// asked for. A named program that is not found is an error.
    pub fn find(
        args: &ContainerArgs,
        path: Option<&std::ffi::OsStr>,
        timeout: Duration,
    ) -> Result<Option<Self>, String> {
        let program = match args.container_runtime.as_deref() {
            Some("none") => return Ok(None),
            Some(named) => Some(lookup(named, path).ok_or_else(|| {
                format!("container runtime {named:?} (--container-runtime or KPT_FN_RUNTIME) not found on PATH")
            })?),
            None => ["docker", "podman"].iter().find_map(|p| lookup(p, path)),
        };
        Ok(program.map(|program| ContainerRuntime {
            program,
            network: false,
            mounts: Vec::new(),
            timeout,
        }))
    }

    /// The arguments of `run` for `image`, as kpt builds them.
    pub fn args(&self, image: &str) -> Vec<String> {
        let mut args: Vec<String> = ["run", "--rm", "-i", "--network"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push(if self.network { "host" } else { "none" }.to_string());
        args.extend(
            ["--user", "nobody", "--security-opt=no-new-privileges"]
                .iter()
                .map(|s| s.to_string()),
        );
        for m in &self.mounts {
            args.push("--mount".to_string());
            args.push(m.clone());
        }
        args.push(image.to_string());
        args
    }

    /// Runs `image` with `input` on stdin.
    pub fn run(&self, image: &str, input: &str) -> Result<RunOutput, String> {
        super::exec::run_program(
            image,
            &self.program,
            &self.args(image),
            &std::env::temp_dir(),
            input,
            self.timeout,
        )
        .map_err(|e| format!("running {image:?} with {}: {e}", self.program.display()))
    }
}

/// `name` as a path when it has a slash, else the first executable of
/// that name on `path`.
fn lookup(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if name.contains('/') {
        let p = Path::new(name);
        return is_executable(p).then(|| p.to_path_buf());
    }
    std::env::split_paths(path?)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime(network: bool, mounts: &[&str]) -> ContainerRuntime {
        ContainerRuntime {
            program: "docker".into(),
            network,
            mounts: mounts.iter().map(|s| s.to_string()).collect(),
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn arguments_are_kpts() {
        assert_eq!(
            runtime(false, &[]).args("ghcr.io/x/f:v1"),
            [
                "run",
                "--rm",
                "-i",
                "--network",
                "none",
                "--user",
                "nobody",
                "--security-opt=no-new-privileges",
                "ghcr.io/x/f:v1"
            ]
        );
        let a = runtime(true, &["type=bind,src=/a,dst=/b"]).args("f");
        assert_eq!(a[4], "host");
        assert_eq!(a[8..], ["--mount", "type=bind,src=/a,dst=/b", "f"]);
    }

    #[test]
    fn the_runtime_is_found_by_name_on_path_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let podman = dir.path().join("podman");
        std::fs::write(&podman, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&podman, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = Some(dir.path().as_os_str());
        let t = Duration::from_secs(1);
        let found = ContainerRuntime::find(&ContainerArgs::default(), path, t).unwrap();
        assert_eq!(found.unwrap().program, podman);
        let none = ContainerArgs {
            container_runtime: Some("none".into()),
        };
        assert_eq!(ContainerRuntime::find(&none, path, t).unwrap(), None);
        let docker = ContainerArgs {
            container_runtime: Some("docker".into()),
        };
        let e = ContainerRuntime::find(&docker, path, t).unwrap_err();
        assert!(e.contains("\"docker\""), "{e}");
        assert_eq!(
            ContainerRuntime::find(&ContainerArgs::default(), None, t).unwrap(),
            None
        );
    }
}
