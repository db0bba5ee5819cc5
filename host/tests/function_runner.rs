//! Porch's function runner, reached over gRPC: `fn render`, `fn eval` and
//! `local` with `--function-runner` against a real gRPC server started on
//! loopback that implements Porch's `evaluator.FunctionEvaluator` service
//! and serves exec functions (scripts, by image), as the runner serves the
//! executables of its functions directory. Also: an image it does not
//! know, a function slower than the deadline, the server killed mid-call,
//! and a message over the size limit.

use porch_variants_tests::copy_dir;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use porch_variants::function_runner::proto::{
    EvaluateFunctionRequest, EvaluateFunctionResponse, SERVICE,
};
use tonic::body::Body;
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic::{Request, Response, Status};

/// The runner's functions: image (without tag) → script run with the
/// ResourceList on stdin.
#[derive(Clone, Default)]
struct Evaluator {
    functions: Arc<BTreeMap<String, PathBuf>>,
    /// Images asked for, in order.
    asked: Arc<Mutex<Vec<String>>>,
    /// Told when a call starts.
    started: Option<tokio::sync::mpsc::UnboundedSender<String>>,
}

impl Evaluator {
    async fn evaluate(
        &self,
        req: EvaluateFunctionRequest,
    ) -> Result<EvaluateFunctionResponse, Status> {
        self.asked.lock().unwrap().push(req.image.clone());
        if let Some(tx) = &self.started {
            let _ = tx.send(req.image.clone());
        }
        let name = req
            .image
            .rsplit_once(':')
            .map_or(req.image.as_str(), |(n, _)| n);
        let Some(script) = self.functions.get(name).cloned() else {
            return Err(Status::not_found(format!(
                "could not find function {}",
                req.image
            )));
        };
        let out = tokio::task::spawn_blocking(move || {
            let mut child = Command::new(&script)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // Written from another thread: a function writing output
            // before it has read all its input would otherwise block on a
            // full pipe while this write blocks on its full stdin.
            let mut stdin = child.stdin.take().unwrap();
            let input = req.resource_list;
            let writer = std::thread::spawn(move || {
                let _ = stdin.write_all(&input);
            });
            let out = child.wait_with_output().unwrap();
            writer.join().unwrap();
            out
        })
        .await
        .unwrap();
        if !out.status.success() {
            return Err(Status::internal(format!(
                "Failed to execute function {:?}: {}",
                name,
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(EvaluateFunctionResponse {
            resource_list: out.stdout,
            log: out.stderr,
        })
    }
}

struct Unary(Evaluator);

impl UnaryService<EvaluateFunctionRequest> for Unary {
    type Response = EvaluateFunctionResponse;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response<Self::Response>, Status>> + Send>,
    >;
    fn call(&mut self, request: Request<EvaluateFunctionRequest>) -> Self::Future {
        let evaluator = self.0.clone();
        Box::pin(async move {
            evaluator
                .evaluate(request.into_inner())
                .await
                .map(Response::new)
        })
    }
}

/// The service as tonic's generated server would route it.
#[derive(Clone)]
struct Service {
    evaluator: Evaluator,
    max_message: usize,
}

impl NamedService for Service {
    const NAME: &'static str = SERVICE;
}

impl tower::Service<http::Request<Body>> for Service {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Infallible>> + Send>,
    >;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            if req.uri().path() != "/evaluator.FunctionEvaluator/EvaluateFunction" {
                return Ok(Status::unimplemented("no such method").into_http());
            }
            let codec = tonic_prost::ProstCodec::<EvaluateFunctionResponse, EvaluateFunctionRequest>::default();
            let mut grpc = Grpc::new(codec)
                .apply_max_message_size_config(Some(this.max_message), Some(this.max_message));
            Ok(grpc.unary(Unary(this.evaluator), req).await)
        })
    }
}

/// A runner on loopback, on its own runtime (dropping it kills the server
/// and its connections at once).
struct Runner {
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
    asked: Arc<Mutex<Vec<String>>>,
    started: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Runner {
    fn start(functions: BTreeMap<String, PathBuf>) -> Runner {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (tx, started) = tokio::sync::mpsc::unbounded_channel();
        let evaluator = Evaluator {
            functions: Arc::new(functions),
            asked: Arc::default(),
            started: Some(tx),
        };
        let asked = evaluator.asked.clone();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(
            tonic::transport::Server::builder()
                .add_service(Service {
                    evaluator,
                    max_message: 6 * 1024 * 1024,
                })
                // No Nagle delay on replies, as Go's net package (and so
                // Porch's runner) sets by default.
                .serve_with_incoming(
                    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
                ),
        );
        Runner {
            addr,
            runtime: Some(runtime),
            asked,
            started,
        }
    }

    fn address(&self) -> String {
        self.addr.to_string()
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }

    /// Kills the server and every connection it holds.
    fn kill(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.kill();
    }
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web # the web tier\nspec:\n  replicas: 1\n";

fn package(root: &Path, image: &str) {
    std::fs::create_dir_all(root).unwrap();
    std::fs::write(
        root.join("Kptfile"),
        format!("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - image: {image}\n"),
    )
    .unwrap();
    std::fs::write(root.join("deploy.yaml"), DEPLOY).unwrap();
}

/// The CLI, with no container runtime (whatever this machine has), so a
/// function the runner does not serve is not found.
fn porch_variants(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(args)
        .env("KPT_FN_RUNTIME", "none")
        .output()
        .unwrap()
}

/// `fn render ROOT --function-runner ADDR EXTRA...`.
fn render_through(root: &Path, runner: &Runner, extra: &[&str]) -> Output {
    let addr = runner.address();
    let mut args = vec![
        "fn",
        "render",
        root.to_str().unwrap(),
        "--function-runner",
        &addr,
    ];
    args.extend_from_slice(extra);
    porch_variants(&args)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// Functions: `scale` sets three replicas (and says so on stderr), `slow`
/// sleeps, `fail` exits 1.
fn functions(dir: &Path) -> BTreeMap<String, PathBuf> {
    BTreeMap::from([
        (
            "example.com/scale".to_string(),
            script(
                dir,
                "scale",
                "echo scaling >&2\nsed 's/replicas: 1/replicas: 3/'",
            ),
        ),
        (
            "example.com/slow".to_string(),
            script(dir, "slow", "sleep 20\ncat"),
        ),
        (
            "example.com/fail".to_string(),
            script(
                dir,
                "fail",
                "cat >/dev/null\necho 'quota exceeded' >&2\nexit 1",
            ),
        ),
    ])
}

#[test]
fn fn_render_runs_a_function_in_the_runner_and_keeps_comments() {
    let tmp = tempfile::tempdir().unwrap();
    let runner = Runner::start(functions(tmp.path()));
    let root = tmp.path().join("app");
    package(&root, "example.com/scale:v1");
    let out = render_through(&root, &runner, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        read(&root.join("deploy.yaml")),
        DEPLOY.replace("replicas: 1", "replicas: 3")
    );
    assert_eq!(runner.asked(), ["example.com/scale:v1"]);

    // Without the runner the same package does not render, and says so.
    package(&root, "example.com/scale:v1");
    let out = porch_variants(&["fn", "render", root.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));
}

#[test]
fn fn_eval_sends_its_image_to_the_runner() {
    let tmp = tempfile::tempdir().unwrap();
    let runner = Runner::start(functions(tmp.path()));
    let root = tmp.path().join("app");
    package(&root, "example.com/fail:v1");
    let addr = runner.address();
    let out = porch_variants(&[
        "fn",
        "eval",
        root.to_str().unwrap(),
        "--image",
        "example.com/scale:v2",
        "--function-runner",
        &format!("http://{addr}"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(read(&root.join("deploy.yaml")).contains("replicas: 3"));
    assert_eq!(runner.asked(), ["example.com/scale:v2"]);
}

#[test]
fn an_unknown_image_and_a_failing_function_fail_the_render_writing_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let runner = Runner::start(functions(tmp.path()));
    let root = tmp.path().join("app");
    let addr = runner.address();
    let looked = format!("function \"example.com/nothing:v1\" not found (looked in: the builtins, no --fn-dir, the function runner at {addr}, no container runtime;");
    for (image, expect) in [
        ("example.com/nothing:v1", looked.as_str()),
        ("example.com/fail:v1", "quota exceeded"),
    ] {
        package(&root, image);
        let out = render_through(&root, &runner, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(expect), "{image}: {stderr}");
        assert_eq!(read(&root.join("deploy.yaml")), DEPLOY);
    }
    // Each asked once: NotFound and a failed function are not retried.
    assert_eq!(
        runner.asked(),
        ["example.com/nothing:v1", "example.com/fail:v1"]
    );
}

#[test]
fn a_function_past_the_deadline_fails_the_render_naming_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let runner = Runner::start(functions(tmp.path()));
    let root = tmp.path().join("app");
    package(&root, "example.com/slow:v1");
    let started = std::time::Instant::now();
    let out = render_through(&root, &runner, &["--function-runner-timeout", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--function-runner-timeout"), "{stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert_eq!(read(&root.join("deploy.yaml")), DEPLOY);
}

#[test]
fn a_runner_killed_mid_call_is_retried_then_reported_unavailable() {
    let tmp = tempfile::tempdir().unwrap();
    let mut runner = Runner::start(functions(tmp.path()));
    let root = tmp.path().join("app");
    package(&root, "example.com/slow:v1");
    let child = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .env("KPT_FN_RUNTIME", "none")
        .args(["fn", "render", root.to_str().unwrap(), "--function-runner"])
        .arg(runner.address())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The call is in the runner: kill it.
    let first = runner.started.blocking_recv().unwrap();
    assert_eq!(first, "example.com/slow:v1");
    runner.kill();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("unavailable"), "{stderr}");
    assert!(stderr.contains("tried 4 times"), "{stderr}");
    assert_eq!(read(&root.join("deploy.yaml")), DEPLOY);
}

#[test]
fn a_package_over_the_message_limit_is_refused_naming_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let runner = Runner::start(functions(tmp.path()));
    let root = tmp.path().join("app");
    package(&root, "example.com/scale:v1");
    let out = render_through(&root, &runner, &["--max-grpc-message-size", "100"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--max-grpc-message-size is 100 bytes"),
        "{stderr}"
    );
    assert!(runner.asked().is_empty());
    assert_eq!(read(&root.join("deploy.yaml")), DEPLOY);
}

#[test]
fn local_mode_renders_drafts_through_the_runner() {
    let tmp = tempfile::tempdir().unwrap();
    let runner = Runner::start(functions(tmp.path()));
    let fleet = tmp.path().join("fleet");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/fleet"),
        &fleet,
    );
    let kptfile = fleet.join("packages/blueprints/web/Kptfile");
    let mut text = read(&kptfile);
    text.push_str("  - image: example.com/scale:v1\n");
    std::fs::write(&kptfile, text).unwrap();

    // Without a runner the blueprint's function is found nowhere.
    let without = tmp.path().join("without");
    copy_dir(&fleet, &without);
    let out = porch_variants(&["local", "--init", without.to_str().unwrap()]);
    assert!(!out.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("example.com/scale:v1"), "{said}");
    assert!(runner.asked().is_empty());

    let out = porch_variants(&[
        "local",
        "--init",
        fleet.to_str().unwrap(),
        "--function-runner",
        &runner.address(),
    ]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    let asked = runner.asked();
    assert!(!asked.is_empty());
    assert!(
        asked.iter().all(|i| i == "example.com/scale:v1"),
        "{asked:?}"
    );
}

/// A stand-in `docker` that records its arguments and runs the function
/// named by the image from the same directory.
fn stand_in_docker(dir: &Path) -> PathBuf {
    script(
        dir,
        "docker",
        &format!(
            "echo \"$@\" >> {log}\nfor last; do :; done\nexec {dir}/\"$(basename \"${{last%%:*}}\")\"",
            log = dir.join("docker.log").display(),
            dir = dir.display()
        ),
    )
}

#[test]
fn a_function_found_nowhere_else_runs_as_a_container_with_kpts_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let runner = Runner::start(BTreeMap::new());
    functions(tmp.path());
    let docker = stand_in_docker(tmp.path());
    let root = tmp.path().join("app");
    package(&root, "example.com/scale:v1");
    let run = |extra: &[&str], envs: &[(&str, &str)]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_porch-variants"));
        cmd.args(["fn", "render", root.to_str().unwrap()])
            .args(extra);
        for (k, v) in envs {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    // Named by flag, after the runner said it does not know the image.
    let out = run(
        &[
            "--function-runner",
            &runner.address(),
            "--container-runtime",
            docker.to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(runner.asked(), ["example.com/scale:v1"]);
    assert_eq!(
        read(&root.join("deploy.yaml")),
        DEPLOY.replace("replicas: 1", "replicas: 3")
    );
    assert_eq!(
        read(&tmp.path().join("docker.log")),
        "run --rm -i --network none --user nobody --security-opt=no-new-privileges example.com/scale:v1\n"
    );
    // Found on PATH by its name.
    package(&root, "example.com/scale:v1");
    let path = format!(
        "{}:{}",
        tmp.path().display(),
        std::env::var("PATH").unwrap()
    );
    let out = run(&[], &[("PATH", &path)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(read(&root.join("deploy.yaml")).contains("replicas: 3"));
    // fn eval's --network and --mount reach the container.
    let out = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args([
            "fn",
            "eval",
            root.to_str().unwrap(),
            "--image",
            "example.com/scale:v2",
        ])
        .args(["--network", "--mount", "type=bind,src=/tmp,dst=/data"])
        .args(["--container-runtime", docker.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = read(&tmp.path().join("docker.log"));
    assert_eq!(
        log.lines().last().unwrap(),
        "run --rm -i --network host --user nobody --security-opt=no-new-privileges --mount type=bind,src=/tmp,dst=/data example.com/scale:v2"
    );
    // A runtime named but missing is a usage error.
    let out = run(&["--container-runtime", "no-such-runtime"], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"no-such-runtime\""));
}

/// The runner's overhead, as a user meets it: whole `fn render` processes
/// over a package of `n` ConfigMaps whose one function is the same
/// identity script, run directly (`exec:` with `--allow-exec`) and through
/// the runner (`image:` with `--function-runner`), beside the floor (the
/// same package with no pipeline), interleaved, medians of the rounds.
/// Ignored: a measurement, run with
/// `cargo test --release -p porch-variants --test function_runner -- --ignored --nocapture runner_overhead`.
#[test]
#[ignore]
fn runner_overhead() {
    let sizes: Vec<usize> = std::env::var("PV_BENCH_SIZES")
        .unwrap_or_else(|_| "100,1000".into())
        .split(',')
        .map(|s| s.trim().parse().unwrap())
        .collect();
    let rounds: usize = std::env::var("PV_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(9);
    let tmp = tempfile::tempdir().unwrap();
    let identity = script(tmp.path(), "identity", "cat");
    let runner = Runner::start(BTreeMap::from([(
        "example.com/identity".to_string(),
        identity.clone(),
    )]));
    let addr = runner.address();
    println!("| ConfigMaps | floor (no function) | exec | runner | runner − exec per call | runner / exec |");
    println!("|---|---|---|---|---|---|");
    for n in sizes {
        let base = tmp.path().join(format!("n{n}"));
        let resources: String = (0..n)
            .map(|i| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i} # keep\ndata:\n  k: v{i}\n---\n"))
            .collect();
        let make = |name: &str, pipeline: &str| -> PathBuf {
            let dir = base.join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join("Kptfile"),
                format!(
                    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n{pipeline}"
                ),
            )
            .unwrap();
            std::fs::write(dir.join("cms.yaml"), &resources).unwrap();
            dir
        };
        let floor = make("floor", "");
        let exec = make(
            "exec",
            &format!("pipeline:\n  mutators:\n  - exec: {}\n", identity.display()),
        );
        let through = make(
            "runner",
            "pipeline:\n  mutators:\n  - image: example.com/identity:v1\n",
        );
        let time = |args: &[&str]| -> f64 {
            let started = std::time::Instant::now();
            let out = porch_variants(args);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            started.elapsed().as_secs_f64() * 1000.0
        };
        let (mut f, mut e, mut r) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            f.push(time(&["fn", "render", floor.to_str().unwrap()]));
            e.push(time(&[
                "fn",
                "render",
                exec.to_str().unwrap(),
                "--allow-exec",
            ]));
            r.push(time(&[
                "fn",
                "render",
                through.to_str().unwrap(),
                "--function-runner",
                &addr,
            ]));
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (f, e, r) = (median(&mut f), median(&mut e), median(&mut r));
        println!(
            "| {n} | {f:.1} ms | {e:.1} ms | {r:.1} ms | {:.1} ms | {:.2}× |",
            r - e,
            r / e
        );
    }
    assert!(!runner.asked().is_empty(), "the runner was called");
}

/// podman, with runc and busybox-static: what a real container run needs
/// here (`scripts/setup.sh --containers` installs them).
fn podman_with_busybox() -> Option<(PathBuf, PathBuf)> {
    let which = |name: &str| -> Option<PathBuf> {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        })
    };
    let podman = which("podman")?;
    which("runc")?;
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())?;
    Some((podman, busybox))
}

/// A function image kpt would run: a root file system of busybox whose
/// entrypoint sets the replicas to the user id it runs as, imported into
/// podman as `name`.
fn busybox_image(podman: &Path, busybox: &Path, dir: &Path, name: &str, conf: &Path) {
    use std::os::unix::fs::symlink;
    let root = dir.join("rootfs");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::copy(busybox, root.join("bin/busybox")).unwrap();
    for tool in ["sh", "sed", "id"] {
        symlink("busybox", root.join("bin").join(tool)).unwrap();
    }
    std::fs::write(
        root.join("etc/passwd"),
        "nobody:x:65534:65534:nobody:/:/bin/sh\n",
    )
    .unwrap();
    std::fs::write(root.join("etc/group"), "nobody:x:65534:\n").unwrap();
    let tar = dir.join("rootfs.tar");
    let out = Command::new("tar")
        .arg("-C")
        .arg(&root)
        .arg("-cf")
        .arg(&tar)
        .arg(".")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(podman)
        .env("CONTAINERS_CONF", conf)
        .args([
            "import",
            "--change",
            r#"ENTRYPOINT ["/bin/sh", "-c", "sed \"s/replicas: 1/replicas: $(id -u)/\""]"#,
        ])
        .arg(&tar)
        .arg(name)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "podman import: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A real container: `fn render` runs a function image with podman, with
/// kpt's flags (no network, user nobody, no new privileges), and the
/// package gets its output (written as `nobody`) with comments kept. Skipped, saying so, where
/// podman, runc or busybox-static is missing.
#[test]
fn a_function_image_runs_in_a_real_podman_container() {
    let Some((podman, busybox)) = podman_with_busybox() else {
        eprintln!("skipped: podman, runc or busybox-static is not installed (scripts/setup.sh --containers)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // This machine's limits: runc on cgroupfs, limits no higher than a
    // sandbox allows (podman's defaults raise them).
    let conf = tmp.path().join("containers.conf");
    std::fs::write(
        &conf,
        "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1000:1000\"]\n[engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\n",
    )
    .unwrap();
    let image = format!("localhost/pv-scale-{}:v1", std::process::id());
    busybox_image(&podman, &busybox, tmp.path(), &image, &conf);
    let root = tmp.path().join("app");
    package(&root, &image);
    let out = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args([
            "fn",
            "render",
            root.to_str().unwrap(),
            "--container-runtime",
            "podman",
        ])
        .env("CONTAINERS_CONF", &conf)
        .output()
        .unwrap();
    let _ = Command::new(&podman)
        .env("CONTAINERS_CONF", &conf)
        .args(["rmi", "-f", &image])
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Run as `nobody` (65534), as kpt runs images, not as this test's user.
    assert_eq!(
        read(&root.join("deploy.yaml")),
        DEPLOY.replace("replicas: 1", "replicas: 65534")
    );
}
