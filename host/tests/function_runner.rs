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
            child
                .stdin
                .take()
                .unwrap()
                .write_all(&req.resource_list)
                .unwrap();
            child.wait_with_output().unwrap()
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
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
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
