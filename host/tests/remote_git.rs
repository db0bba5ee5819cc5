//! Repositories on a remote Git server (`spec.git.repo` a URL): a real
//! server on loopback that each test starts itself — `git http-backend`
//! run as CGI behind a small HTTP server with basic authentication — and
//! the remote store ([`porch_variants::store::remote`]) writing to it
//! through its mirrors: local mode end to end, writers racing, wrong
//! credentials, and the server dying in the middle of a push.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use porch_variants::local::cli::{
    open_repositories, publish_files, run_local, run_rpkg, LocalArgs, Names, Output, RpkgCommand,
    RpkgOutput,
};
use porch_variants::store::git::{init_bare, GitRepoConfig, GitRevisions};
use porch_variants::store::remote::{Credentials, RemoteConfig, RemoteOptions, RemoteRevisions};
use porch_variants::store::{Files, NewRevision, PackageRevisionStore, PrFilter, StoreError};
use pv_core::api::package_revision::Lifecycle;
use pv_core::api::PackageRevision;

const NS: &str = "default";
const USER: &str = "porch";
const PASSWORD: &str = "s3cret-pw";
const KPTFILE: &str =
    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\ninfo:\n  description: web\n";
const CONFIG: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  replicas: \"2\"\n";

// ---------------------------------------------------------------------------
// The server.

/// What the server does with the next push (`POST …/git-receive-pack`).
const PUSH_NORMAL: u8 = 0;
/// Dies when the push's request has arrived, before any ref changes.
const DIE_BEFORE_UPDATE: u8 = 1;
/// Dies after `git receive-pack` updated the refs, before answering.
const DIE_AFTER_UPDATE: u8 = 2;

struct Shared {
    root: PathBuf,
    home: PathBuf,
    password: Mutex<String>,
    requests: AtomicUsize,
    unauthorized: AtomicUsize,
    pushes: AtomicUsize,
    on_push: AtomicU8,
    stopped: AtomicBool,
    addr: std::net::SocketAddr,
}

/// A Git server on 127.0.0.1: repositories `<root>/<name>.git` at
/// `http://127.0.0.1:<port>/<name>.git`, basic authentication as
/// [`USER`].
struct Server {
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `root` on `port` (0: any free port).
    fn start(root: &Path, port: u16) -> Server {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("the server binds");
        let home = root.join(".home");
        std::fs::create_dir_all(&home).unwrap();
        let shared = Arc::new(Shared {
            root: root.to_path_buf(),
            home,
            password: Mutex::new(PASSWORD.to_string()),
            requests: AtomicUsize::new(0),
            unauthorized: AtomicUsize::new(0),
            pushes: AtomicUsize::new(0),
            on_push: AtomicU8::new(PUSH_NORMAL),
            stopped: AtomicBool::new(false),
            addr: listener.local_addr().unwrap(),
        });
        let s = shared.clone();
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = conn else { continue };
                let s = s.clone();
                std::thread::spawn(move || {
                    let _ = handle(stream, &s);
                });
            }
            // The listener is dropped here: new connections are refused.
        });
        Server {
            shared,
            accept: Some(accept),
        }
    }

    fn port(&self) -> u16 {
        self.shared.addr.port()
    }

    fn url(&self, repo: &str) -> String {
        format!("http://127.0.0.1:{}/{repo}.git", self.port())
    }

    fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }

    fn set_password(&self, password: &str) {
        *self.shared.password.lock().unwrap() = password.to_string();
    }

    fn on_next_push(&self, what: u8) {
        self.shared.on_push.store(what, Ordering::SeqCst);
    }

    /// Waits until the server has stopped listening (it died, or `kill`).
    fn wait_stopped(&mut self) {
        if let Some(t) = self.accept.take() {
            t.join().unwrap();
        }
    }

    fn kill(&mut self) {
        stop(&self.shared);
        self.wait_stopped();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

fn stop(s: &Shared) {
    if !s.stopped.swap(true, Ordering::SeqCst) {
        // Wakes the accept loop, which sees the flag and drops the listener.
        let _ = TcpStream::connect(s.addr);
    }
}

fn handle(stream: TcpStream, s: &Shared) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Ok(());
    };
    let (method, target) = (method.to_string(), target.to_string());
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            return Ok(());
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    if s.stopped.load(Ordering::SeqCst) {
        return Ok(());
    }
    s.requests.fetch_add(1, Ordering::SeqCst);
    let expected = format!(
        "Basic {}",
        b64(format!("{USER}:{}", s.password.lock().unwrap()).as_bytes())
    );
    if headers.get("authorization") != Some(&expected) {
        s.unauthorized.fetch_add(1, Ordering::SeqCst);
        out.write_all(b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
        return Ok(());
    }
    if headers
        .get("expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        out.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let body = if headers
        .get("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        let mut body = Vec::new();
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            if n == 0 {
                let mut end = String::new();
                reader.read_line(&mut end)?;
                break;
            }
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk)?;
            body.extend_from_slice(&chunk[..n]);
        }
        body
    } else {
        let n: usize = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; n];
        reader.read_exact(&mut body)?;
        body
    };
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let push = method == "POST" && path.ends_with("/git-receive-pack");
    let on_push = if push {
        s.pushes.fetch_add(1, Ordering::SeqCst);
        s.on_push.swap(PUSH_NORMAL, Ordering::SeqCst)
    } else {
        PUSH_NORMAL
    };
    if on_push == DIE_BEFORE_UPDATE {
        stop(s);
        return Ok(());
    }
    let mut cmd = Command::new("git");
    cmd.arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &s.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PROJECT_ROOT", &s.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env(
            "CONTENT_TYPE",
            headers.get("content-type").cloned().unwrap_or_default(),
        )
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("REMOTE_USER", USER)
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("SERVER_PROTOCOL", "HTTP/1.1")
        .env("GATEWAY_INTERFACE", "CGI/1.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (header, var) in [
        ("content-encoding", "HTTP_CONTENT_ENCODING"),
        ("git-protocol", "HTTP_GIT_PROTOCOL"),
    ] {
        if let Some(v) = headers.get(header) {
            cmd.env(var, v);
        }
    }
    let mut child = cmd.spawn()?;
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let output = child.wait_with_output()?;
    let _ = writer.join();
    if on_push == DIE_AFTER_UPDATE {
        stop(s);
        return Ok(());
    }
    let raw = output.stdout;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, i + 4))
        .or_else(|| {
            raw.windows(2)
                .position(|w| w == b"\n\n")
                .map(|i| (i, i + 2))
        })
        .unwrap_or((raw.len(), raw.len()));
    let head = String::from_utf8_lossy(&raw[..split.0]).into_owned();
    let body = &raw[split.1..];
    let mut status = "200 OK".to_string();
    let mut response = String::new();
    for h in head.lines() {
        match h.split_once(':') {
            Some((k, v)) if k.eq_ignore_ascii_case("status") => status = v.trim().to_string(),
            Some(_) => response.push_str(&format!("{}\r\n", h.trim_end())),
            None => {}
        }
    }
    out.write_all(
        format!(
            "HTTP/1.1 {status}\r\n{response}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    )?;
    out.write_all(body)?;
    out.flush()
}

fn b64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            out.push(if i <= c.len() {
                char::from(A[((n >> (18 - 6 * i)) & 63) as usize])
            } else {
                '='
            });
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Helpers.

/// A bare repository `<root>/<name>.git` on the server, with branch main.
fn server_repo(root: &Path, name: &str) -> PathBuf {
    let path = root.join(format!("{name}.git"));
    init_bare(&path, "main").unwrap();
    path
}

/// Publishes `web` v1 into a server repository directly (the upstream the
/// tests clone).
fn seed_blueprint(path: &Path) {
    let store = GitRevisions::open(vec![GitRepoConfig {
        name: "blueprints".into(),
        namespace: NS.into(),
        path: path.to_path_buf(),
        branch: "main".into(),
        directory: String::new(),
    }])
    .unwrap();
    publish_files(&store, NS, "blueprints", "web", "v1", files("web"), "init").unwrap();
}

fn files(tag: &str) -> Files {
    Files::from([
        ("Kptfile".to_string(), KPTFILE.to_string()),
        (
            "settings.yaml".to_string(),
            CONFIG.replace("\"2\"", &format!("\"{tag}\"")),
        ),
    ])
}

/// The refs of a repository on disk (`refname → commit`).
fn refs_of(git_dir: &Path) -> BTreeMap<String, String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["for-each-ref", "--format=%(refname) %(objectname)"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(r, o)| (r.to_string(), o.to_string()))
        .collect()
}

/// `git ls-remote` of `url` with the server's credentials.
fn ls_remote(url: &str) -> String {
    let out = Command::new("git")
        .args(["ls-remote", url])
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "http.extraHeader")
        .env(
            "GIT_CONFIG_VALUE_0",
            format!(
                "Authorization: Basic {}",
                b64(format!("{USER}:{PASSWORD}").as_bytes())
            ),
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The paths in the main branch of a repository on disk.
fn main_tree(git_dir: &Path) -> String {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["ls-tree", "-r", "--name-only", "main"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

fn basic(password: &str) -> Option<Credentials> {
    Some(Credentials::Basic {
        username: USER.into(),
        password: password.into(),
    })
}

fn remote(server: &Server, name: &str, mirrors: &Path, password: &str) -> RemoteConfig {
    RemoteConfig {
        repo: GitRepoConfig {
            name: name.into(),
            namespace: NS.into(),
            path: mirrors.join(format!("{name}.git")),
            branch: "main".into(),
            directory: String::new(),
        },
        url: server.url(name),
        secret: Some("git-creds".into()),
        credentials: basic(password),
    }
}

fn open(server: &Server, name: &str, mirrors: &Path) -> RemoteRevisions {
    RemoteRevisions::open(vec![], vec![remote(server, name, mirrors, PASSWORD)]).unwrap()
}

fn draft(repo: &str, package: &str, ws: &str) -> NewRevision {
    let mut pr = PackageRevision::default();
    pr.metadata.namespace = NS.into();
    pr.spec.repository = repo.into();
    pr.spec.package_name = package.into();
    pr.spec.workspace_name = ws.into();
    NewRevision {
        revision: pr,
        files: files(ws),
        upstream_lock: None,
    }
}

fn lifecycle(store: &dyn PackageRevisionStore, name: &str) -> Lifecycle {
    store.get(NS, name).unwrap().spec.lifecycle
}

// ---------------------------------------------------------------------------
// Tests.

/// Local mode against the server: Repositories with http URLs and a
/// basic-auth Secret; a PackageVariant clones the published blueprint into
/// the edge repository (the draft is on the server), `rpkg propose` and
/// `rpkg approve` publish it (the tag `web/v1` is on the server), and a
/// second run has nothing to do.
#[test]
fn local_mode_clones_and_publishes_on_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    seed_blueprint(&server_repo(&served, "blueprints"));
    let edge = server_repo(&served, "edge-1");
    let server = Server::start(&served, 0);

    let dir = tmp.path().join("fleet");
    std::fs::create_dir_all(&dir).unwrap();
    let repository = |name: &str| {
        format!(
            "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  type: git\n  git:\n    repo: {}\n    branch: main\n    secretRef:\n      name: git-creds\n",
            server.url(name)
        )
    };
    std::fs::write(
        dir.join("repositories.yaml"),
        format!(
            "{}---\n{}---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: git-creds\n  namespace: default\ntype: kubernetes.io/basic-auth\ndata:\n  username: {}\n  password: {}\n",
            repository("blueprints"),
            repository("edge-1"),
            b64(USER.as_bytes()),
            b64(PASSWORD.as_bytes())
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("variants.yaml"),
        "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata:\n  name: edge-1-web\n  namespace: default\nspec:\n  upstream:\n    repo: blueprints\n    package: web\n  downstream:\n    repo: edge-1\n    package: web\n",
    )
    .unwrap();
    let args = LocalArgs {
        dir: dir.clone(),
        init: false,
        output: Output::Json,
        native_core: true,
        max_passes: 10,
        no_progress: true,
        porch_api: Default::default(),
        reconcile_all: false,
        jobs: Some(2),
        validate: Default::default(),
        runner: Default::default(),
        dry_run: false,
    };
    let (summary, ok) = run_local(&args).unwrap();
    assert!(ok, "{:#?}", summary.report);
    assert!(dir
        .join(".porch-variants/mirrors/default/edge-1.git")
        .is_dir());

    // The clone's draft is on the server, with its metadata.
    let listed = ls_remote(&server.url("edge-1"));
    assert!(listed.contains("refs/heads/drafts/web/"), "{listed}");
    assert!(listed.contains("refs/porch-variants/metadata"), "{listed}");
    assert!(!listed.contains("refs/tags/web/v1"), "{listed}");

    let all = || Names {
        names: vec![],
        all: true,
        selector: None,
        force: false,
    };
    run_rpkg(
        &dir,
        NS,
        &RpkgCommand::Propose(all()),
        RpkgOutput::Text,
        porch_variants::local::Validation::Strict,
    )
    .unwrap();
    let listed = ls_remote(&server.url("edge-1"));
    assert!(listed.contains("refs/heads/proposed/web/"), "{listed}");
    assert!(!listed.contains("refs/heads/drafts/web/"), "{listed}");
    run_rpkg(
        &dir,
        NS,
        &RpkgCommand::Approve(all()),
        RpkgOutput::Text,
        porch_variants::local::Validation::Strict,
    )
    .unwrap();
    let listed = ls_remote(&server.url("edge-1"));
    assert!(listed.contains("refs/tags/web/v1"), "{listed}");
    assert!(!listed.contains("refs/heads/proposed/"), "{listed}");
    let tree = main_tree(&edge);
    assert!(
        tree.contains("web/Kptfile") && tree.contains("web/settings.yaml"),
        "{tree}"
    );

    // A fresh open reads the published clone from the server, and a
    // second run writes nothing.
    let opened = open_repositories(&dir, false, porch_variants::local::Validation::Strict).unwrap();
    let prs = opened
        .store
        .list(NS, &PrFilter::package("edge-1", "web"))
        .unwrap();
    assert_eq!(prs.len(), 1, "{prs:#?}");
    assert_eq!(prs[0].spec.lifecycle, Lifecycle::Published);
    let lock = prs[0]
        .status
        .self_lock
        .as_ref()
        .unwrap()
        .git
        .as_ref()
        .unwrap();
    assert_eq!(
        lock.repo,
        server.url("edge-1"),
        "the self lock names the URL"
    );
    drop(opened);
    let before = refs_of(&edge);
    let (summary, ok) = run_local(&args).unwrap();
    assert!(ok, "{:#?}", summary.report);
    assert!(summary.report.events.is_empty(), "{:#?}", summary.report);
    assert_eq!(refs_of(&edge), before);
}

/// Two writers with their own mirrors on one repository. First in turn,
/// the second one stale: its push is rejected once (another writer moved
/// the metadata ref), it fetches, writes again, and both packages are
/// published on main. Then truly at once: every package of both lands. A
/// write that conflicts once re-read (the same draft) fails as a Conflict,
/// and the first writer's draft stays as it wrote it.
#[test]
fn two_writers_racing_on_one_branch_both_land() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let site = server_repo(&served, "site");
    let server = Server::start(&served, 0);
    let a = open(&server, "site", &tmp.path().join("a"));
    let b = open(&server, "site", &tmp.path().join("b"));

    publish_files(&a, NS, "site", "pkg-a", "v1", files("a"), "init").unwrap();
    assert_eq!(a.stats().retries, 0);
    // b has not seen a's writes: its first push is rejected.
    publish_files(&b, NS, "site", "pkg-b", "v1", files("b"), "init").unwrap();
    let stats = b.stats();
    eprintln!("stale writer: {stats:?}");
    assert_eq!(stats.rejected_pushes, 1, "{stats:?}");
    assert_eq!(stats.retries, 1, "{stats:?}");
    assert_eq!(stats.pushes, 3, "{stats:?}");
    let listed = ls_remote(&server.url("site"));
    assert!(
        listed.contains("refs/tags/pkg-a/v1") && listed.contains("refs/tags/pkg-b/v1"),
        "{listed}"
    );
    let tree = main_tree(&site);
    assert!(
        tree.contains("pkg-a/Kptfile") && tree.contains("pkg-b/Kptfile"),
        "{tree}"
    );
    a.sync().unwrap();
    for s in [&a, &b] {
        assert_eq!(lifecycle(s, "site.pkg-a.v1"), Lifecycle::Published);
        assert_eq!(lifecycle(s, "site.pkg-b.v1"), Lifecycle::Published);
    }

    // At once: each writer publishes 3 packages, both starting together.
    let barrier = Barrier::new(2);
    std::thread::scope(|scope| {
        for (w, store) in [("a", &a), ("b", &b)] {
            let barrier = &barrier;
            scope.spawn(move || {
                barrier.wait();
                for i in 0..3 {
                    let pkg = format!("race-{w}-{i}");
                    publish_files(store, NS, "site", &pkg, "v1", files(&pkg), "init")
                        .unwrap_or_else(|e| panic!("{pkg}: {e}"));
                }
            });
        }
    });
    eprintln!("racing: a {:?}, b {:?}", a.stats(), b.stats());
    let listed = ls_remote(&server.url("site"));
    let tree = main_tree(&site);
    for w in ["a", "b"] {
        for i in 0..3 {
            let pkg = format!("race-{w}-{i}");
            assert!(listed.contains(&format!("refs/tags/{pkg}/v1")), "{listed}");
            assert!(tree.contains(&format!("{pkg}/settings.yaml")), "{tree}");
        }
    }
    assert!(!listed.contains("refs/heads/drafts/"), "{listed}");
    assert!(!listed.contains("refs/heads/proposed/"), "{listed}");

    // The same draft from both: the stale writer's create is a Conflict
    // once it has re-read the remote.
    a.sync().unwrap();
    b.sync().unwrap();
    let made = a.create(draft("site", "shared", "ws")).unwrap();
    let before = b.stats();
    let mut theirs = draft("site", "shared", "ws");
    theirs.files = files("theirs");
    match b.create(theirs) {
        Err(StoreError::Conflict(m)) => assert!(m.contains("already exists"), "{m}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(b.stats().retries, before.retries + 1);
    let on_server = ls_remote(&server.url("site"));
    let draft_ref = on_server
        .lines()
        .find(|l| l.ends_with("refs/heads/drafts/shared/ws"))
        .expect("a's draft is on the server");
    let commit = made.status.self_lock.unwrap().git.unwrap().commit;
    assert!(draft_ref.starts_with(&commit), "{draft_ref} vs {commit}");
    let files_b = b
        .resources(NS, "site.shared.ws")
        .unwrap()
        .spec
        .resources
        .unwrap();
    assert_eq!(files_b, files("ws"), "b reads a's draft");
}

/// Two stores on one mirror, as two reconciles of one namespace in
/// Kubernetes mode each open their own: opened and writing at the same
/// time, they take turns on the mirror, and every write lands.
#[test]
fn two_stores_on_one_mirror_take_turns() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let site = server_repo(&served, "site");
    let server = Server::start(&served, 0);
    let mirrors = tmp.path().join("mirrors");
    let barrier = Barrier::new(2);
    std::thread::scope(|scope| {
        for w in ["a", "b"] {
            let (barrier, server, mirrors) = (&barrier, &server, &mirrors);
            scope.spawn(move || {
                barrier.wait();
                let store = open(server, "site", mirrors);
                for i in 0..4 {
                    let pkg = format!("turn-{w}-{i}");
                    publish_files(&store, NS, "site", &pkg, "v1", files(&pkg), "init")
                        .unwrap_or_else(|e| panic!("{pkg}: {e}"));
                }
            });
        }
    });
    let listed = ls_remote(&server.url("site"));
    let tree = main_tree(&site);
    for w in ["a", "b"] {
        for i in 0..4 {
            let pkg = format!("turn-{w}-{i}");
            assert!(listed.contains(&format!("refs/tags/{pkg}/v1")), "{listed}");
            assert!(tree.contains(&format!("{pkg}/settings.yaml")), "{tree}");
        }
    }
    let fsck = Command::new("git")
        .arg("--git-dir")
        .arg(mirrors.join("site.git"))
        .args(["fsck", "--strict"])
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}

/// A store opened on a mirror that this process fetched moments ago reads
/// it without fetching again (`reuse_fetch_for`, Kubernetes mode's
/// `--packagerevisions.git-fetch-interval`); its writes still meet the
/// remote as it is: another writer's change is fetched when the push is
/// refused, and both land.
#[test]
fn a_mirror_fetched_moments_ago_is_not_fetched_at_open() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let site = server_repo(&served, "site");
    let server = Server::start(&served, 0);
    let mirrors = tmp.path().join("mirrors");
    let options = RemoteOptions {
        reuse_fetch_for: Duration::from_secs(600),
        ..RemoteOptions::default()
    };
    let cfg = || remote(&server, "site", &mirrors, PASSWORD);
    let first = RemoteRevisions::open_with(vec![], vec![cfg()], options.clone()).unwrap();
    assert_eq!(first.stats().fetches, 1);
    publish_files(&first, NS, "site", "pkg-1", "v1", files("1"), "init").unwrap();

    let requests = server.requests();
    let second = RemoteRevisions::open_with(vec![], vec![cfg()], options.clone()).unwrap();
    assert_eq!(second.stats().fetches, 0, "not fetched again");
    assert_eq!(server.requests(), requests, "the server was not asked");
    assert_eq!(lifecycle(&second, "site.pkg-1.v1"), Lifecycle::Published);

    // Another process (its own mirror) publishes meanwhile; the reused
    // mirror does not show it, and a write on it is refused once, fetched
    // and made again: both packages land.
    let other = open(&server, "site", &tmp.path().join("other"));
    publish_files(&other, NS, "site", "pkg-2", "v1", files("2"), "init").unwrap();
    publish_files(&second, NS, "site", "pkg-3", "v1", files("3"), "init").unwrap();
    assert_eq!(second.stats().retries, 1, "{:?}", second.stats());
    let tree = main_tree(&site);
    for pkg in ["pkg-1", "pkg-2", "pkg-3"] {
        assert!(tree.contains(&format!("{pkg}/settings.yaml")), "{tree}");
    }
    // The first store reads what the second fetched and wrote.
    assert_eq!(lifecycle(&first, "site.pkg-2.v1"), Lifecycle::Published);
    assert_eq!(lifecycle(&first, "site.pkg-3.v1"), Lifecycle::Published);

    // Without reuse, opening fetches.
    let third = RemoteRevisions::open(vec![], vec![cfg()]).unwrap();
    assert_eq!(third.stats().fetches, 1);
}

/// Two stores on one mirror; one's push fails (the server dies) and its
/// write is undone on the mirror. The other store's earlier write is not
/// undone with it (the mirror goes back to what the remote is known to
/// have, whichever store pushed last), and its next write keeps it on the
/// remote.
#[test]
fn an_undone_write_on_a_shared_mirror_keeps_the_other_stores_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let site = server_repo(&served, "site");
    let mut server = Server::start(&served, 0);
    let port = server.port();
    let mirrors = tmp.path().join("mirrors");
    let a = open(&server, "site", &mirrors);
    let b = open(&server, "site", &mirrors);
    let draft_b = b
        .create(draft("site", "pkg-b", "ws"))
        .unwrap()
        .metadata
        .name;
    let on_server = refs_of(&site);
    assert!(on_server.contains_key("refs/heads/drafts/pkg-b/ws"));

    server.on_next_push(DIE_BEFORE_UPDATE);
    a.create(draft("site", "pkg-a", "ws"))
        .expect_err("the server died");
    server.wait_stopped();
    let mirror = refs_of(&mirrors.join("site.git"));
    assert!(
        mirror.contains_key("refs/heads/drafts/pkg-b/ws"),
        "b's draft was undone with a's write: {mirror:?}"
    );
    assert!(!mirror.contains_key("refs/heads/drafts/pkg-a/ws"));

    let server = Server::start(&served, port);
    b.update_lifecycle(NS, &draft_b, Lifecycle::Proposed)
        .unwrap();
    let listed = ls_remote(&server.url("site"));
    assert!(listed.contains("refs/heads/proposed/pkg-b/ws"), "{listed}");
    a.create(draft("site", "pkg-a", "ws")).unwrap();
    let listed = ls_remote(&server.url("site"));
    assert!(listed.contains("refs/heads/drafts/pkg-a/ws"), "{listed}");
    assert!(listed.contains("refs/heads/proposed/pkg-b/ws"), "{listed}");
}

/// Wrong credentials: the repository opens as unreachable (its objects
/// fail, not the store), and a write to it fails at once with an error
/// naming the Repository and `spec.git.secretRef`, after at most a few
/// requests at open and none at the write. Credentials revoked between
/// open and write: the push fails the same way, is not retried, and the
/// mirror shows nothing of the write.
#[test]
fn wrong_credentials_fail_clearly_without_retrying() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let site = server_repo(&served, "site");
    let server = Server::start(&served, 0);

    let unreachable = RemoteRevisions::open(
        vec![],
        vec![remote(&server, "site", &tmp.path().join("m1"), "wrong")],
    )
    .expect("an unreachable repository does not stop the store");
    let at_open = server.requests();
    let err = unreachable
        .create(draft("site", "web", "ws"))
        .expect_err("nothing is written to an unreachable repository");
    assert_eq!(server.requests(), at_open, "the write was tried");
    // The Repository controller asks about the repository itself.
    let not_ready = match unreachable.require_reachable() {
        Ok(_) => panic!("an unreachable repository is not ready"),
        Err(e) => e.to_string(),
    };
    assert!(
        not_ready.contains("could not be reached") && not_ready.contains("authentication"),
        "{not_ready}"
    );
    let msg = err.to_string();
    eprintln!("{msg}");
    assert!(
        msg.contains("Repository default/site")
            && msg.contains("spec.git.secretRef \"git-creds\"")
            && msg.contains("authentication"),
        "{msg}"
    );
    assert!(!msg.contains("wrong"), "the password is not shown: {msg}");
    let requests = server.requests();
    eprintln!("requests with wrong credentials: {requests}");
    assert!((1..=2).contains(&requests), "{requests} requests");

    let store = open(&server, "site", &tmp.path().join("m2"));
    let before_server = refs_of(&site);
    let before = server.requests();
    server.set_password("rotated");
    let err = store
        .create(draft("site", "web", "ws"))
        .expect_err("revoked credentials do not push");
    let msg = err.to_string();
    assert!(
        msg.contains("spec.git.secretRef") && msg.contains("default/site"),
        "{msg}"
    );
    let during = server.requests() - before;
    eprintln!("requests of the refused write: {during}");
    assert!((1..=2).contains(&during), "{during} requests");
    let stats = store.stats();
    assert_eq!((stats.retries, stats.failed_pushes), (0, 1), "{stats:?}");
    assert!(store.list(NS, &PrFilter::default()).unwrap().is_empty());
    assert_eq!(refs_of(&site), before_server);
}

/// The server dies in the middle of a publish (its request arrived, no ref
/// changed): the write fails, the server and the mirror show the revision
/// still proposed, and once the server is back a sync and the same
/// approval publish it.
#[test]
fn a_server_killed_mid_push_leaves_nothing_half_written() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let site = server_repo(&served, "site");
    let mut server = Server::start(&served, 0);
    let port = server.port();
    let mirrors = tmp.path().join("m");
    let store = open(&server, "site", &mirrors);
    let name = store
        .create(draft("site", "web", "ws"))
        .unwrap()
        .metadata
        .name;
    store
        .update_lifecycle(NS, &name, Lifecycle::Proposed)
        .unwrap();
    let before = refs_of(&site);
    let mirror_before = refs_of(&mirrors.join("site.git"));

    server.on_next_push(DIE_BEFORE_UPDATE);
    let err = store
        .update_lifecycle(NS, &name, Lifecycle::Published)
        .expect_err("the server died");
    eprintln!("{err}");
    server.wait_stopped();
    assert!(err.to_string().contains("default/site"), "{err}");
    assert_eq!(refs_of(&site), before, "nothing changed on the server");
    assert_eq!(
        refs_of(&mirrors.join("site.git")),
        mirror_before,
        "nothing half written in the mirror"
    );
    assert_eq!(lifecycle(&store, &name), Lifecycle::Proposed);
    assert!(store.list(NS, &PrFilter::default()).unwrap().len() == 1);
    // While it is down, a sync fails (and changes nothing).
    assert!(store.sync().is_err());
    assert_eq!(lifecycle(&store, &name), Lifecycle::Proposed);

    let server = Server::start(&served, port);
    store.sync().unwrap();
    let published = store
        .update_lifecycle(NS, &name, Lifecycle::Published)
        .unwrap();
    assert_eq!(published.spec.revision, 1);
    let listed = ls_remote(&server.url("site"));
    assert!(listed.contains("refs/tags/web/v1"), "{listed}");
    assert!(!listed.contains("refs/heads/proposed/"), "{listed}");
    assert!(main_tree(&site).contains("web/Kptfile"));
}

/// The server dies after applying a push, before answering: the write is
/// reported failed and the mirror keeps the last known state; once the
/// server is back, a sync shows the write, and making it again converges.
#[test]
fn a_push_applied_before_the_server_died_shows_after_the_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let site = server_repo(&served, "site");
    let mut server = Server::start(&served, 0);
    let port = server.port();
    let store = open(&server, "site", &tmp.path().join("m"));
    let name = store
        .create(draft("site", "web", "ws"))
        .unwrap()
        .metadata
        .name;
    store
        .update_lifecycle(NS, &name, Lifecycle::Proposed)
        .unwrap();

    server.on_next_push(DIE_AFTER_UPDATE);
    store
        .update_lifecycle(NS, &name, Lifecycle::Published)
        .expect_err("no answer came");
    server.wait_stopped();
    assert!(refs_of(&site).contains_key("refs/tags/web/v1"));
    assert_eq!(lifecycle(&store, &name), Lifecycle::Proposed);

    let _server = Server::start(&served, port);
    store.sync().unwrap();
    assert_eq!(lifecycle(&store, &name), Lifecycle::Published);
    let again = store
        .update_lifecycle(NS, &name, Lifecycle::Published)
        .unwrap();
    assert_eq!(again.spec.revision, 1);
    let tags: Vec<String> = refs_of(&site)
        .into_keys()
        .filter(|r| r.starts_with("refs/tags/"))
        .collect();
    assert_eq!(tags, ["refs/tags/web/v1"]);
}

/// Misconfigured remote Repositories are refused before anything is
/// fetched, naming the Repository and the field; a `file://` remote works
/// like any other (no server needed), and its writes are pushed.
#[test]
fn remote_repositories_are_checked_and_file_urls_work() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fleet");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |git: &str, extra: &str| {
        std::fs::write(
            dir.join("repositories.yaml"),
            format!("kind: Repository\nmetadata:\n  name: site\nspec:\n  git:\n{git}{extra}"),
        )
        .unwrap();
    };
    let refused = |needles: &[&str]| {
        let err = match open_repositories(&dir, false, porch_variants::local::Validation::Strict) {
            Ok(_) => panic!("opened"),
            Err(e) => e.to_string(),
        };
        for n in needles {
            assert!(err.contains(n), "{n:?} missing from: {err}");
        }
    };
    write("    repo: ext::sh -c touch% /tmp/pwned\n", "");
    refused(&["Repository default/site", "spec.git.repo"]);
    write("    repo: ftp://example.com/r.git\n", "");
    refused(&["spec.git.repo", "not supported"]);
    write(
        "    repo: https://example.com/r.git\n    secretRef:\n      name: missing\n",
        "",
    );
    refused(&[
        "Repository default/site",
        "spec.git.secretRef \"missing\"",
        "no Secret missing",
    ]);
    write(
        "    repo: https://example.com/r.git\n    secretRef:\n      name: creds\n",
        "---\nkind: Secret\nmetadata:\n  name: creds\ntype: kubernetes.io/basic-auth\ndata:\n  username: dXNlcg==\n",
    );
    refused(&["spec.git.secretRef \"creds\"", "data.password is missing"]);
    // A Secret of another namespace is not used.
    write(
        "    repo: https://example.com/r.git\n    secretRef:\n      name: creds\n",
        "---\nkind: Secret\nmetadata:\n  name: creds\n  namespace: other\ndata:\n  bearerToken: dG9r\n",
    );
    refused(&["no Secret creds in namespace default"]);

    // file:// to an empty repository (no branch yet): the mirror is made,
    // and a create is pushed with the main branch it starts from.
    let served = tmp.path().join("site.git");
    let init = Command::new("git")
        .args(["init", "--quiet", "--bare"])
        .arg(&served)
        .status()
        .unwrap();
    assert!(init.success());
    write(
        &format!(
            "    repo: file://{}\n    directory: pkgs\n",
            served.display()
        ),
        "",
    );
    let opened = open_repositories(&dir, false, porch_variants::local::Validation::Strict).unwrap();
    assert!(opened.store.is_remote(NS, "site"));
    opened.store.create(draft("site", "web", "ws")).unwrap();
    let refs = refs_of(&served);
    assert!(refs.contains_key("refs/heads/drafts/web/ws"), "{refs:?}");
    assert!(refs.contains_key("refs/heads/main"), "{refs:?}");
    let tree = Command::new("git")
        .arg("--git-dir")
        .arg(&served)
        .args(["ls-tree", "-r", "--name-only", "drafts/web/ws"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&tree.stdout).contains("pkgs/web/Kptfile"));
    assert!(dir
        .join(".porch-variants/mirrors/default/site.git")
        .is_dir());
}

/// A store fenced by a closed gate (the replica lost the object's shard)
/// writes nothing: no push reaches the server, the mirror keeps the
/// remote's refs, and the error says why. Open again, it writes.
#[test]
fn a_fenced_store_writes_nothing_once_its_gate_closes() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    server_repo(&served, "site");
    let server = Server::start(&served, 0);
    let mirrors = tmp.path().join("mirrors");
    let (gate_tx, gate) = tokio::sync::watch::channel(true);
    let store = open(&server, "site", &mirrors).fenced(gate);
    let before = ls_remote(&server.url("site"));
    gate_tx.send_replace(false);
    let e = store
        .create(draft("site", "fenced", "ws"))
        .expect_err("the gate is closed");
    assert!(
        matches!(e, porch_variants::store::StoreError::NotLeader { .. }),
        "{e}"
    );
    assert!(e.to_string().contains("create site.fenced.ws"), "{e}");
    assert_eq!(ls_remote(&server.url("site")), before);
    assert_eq!(
        refs_of(&mirrors.join("site.git")),
        refs_of(&served.join("site.git"))
    );
    gate_tx.send_replace(true);
    store
        .create(draft("site", "fenced", "ws"))
        .expect("the gate is open");
    assert!(ls_remote(&server.url("site")).contains("refs/heads/drafts/fenced/ws"));
}

/// One remote repository that cannot be reached fails only what writes to
/// it: the run goes on for the other repositories, the variant cloning
/// into it fails naming the Repository, git's message is said once per
/// line, and the run exits 1.
#[test]
fn an_unreachable_remote_fails_only_its_own_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fleet");
    let seed = dir.join("packages/blueprints/web");
    std::fs::create_dir_all(&seed).unwrap();
    std::fs::write(
        seed.join("Kptfile"),
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\n",
    )
    .unwrap();
    let gone = tmp.path().join("gone/down.git");
    std::fs::write(
        dir.join("repositories.yaml"),
        format!(
            "kind: Repository\nmetadata:\n  name: blueprints\n---\nkind: Repository\nmetadata:\n  name: edge-ok\n---\nkind: Repository\nmetadata:\n  name: edge-down\nspec:\n  git:\n    repo: file://{}\n",
            gone.display()
        ),
    )
    .unwrap();
    let variant = |name: &str, repo: &str| {
        format!("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata:\n  name: {name}\nspec:\n  upstream:\n    repo: blueprints\n    package: web\n  downstream:\n    repo: {repo}\n    package: web\n")
    };
    std::fs::write(
        dir.join("variants.yaml"),
        format!(
            "{}---\n{}",
            variant("ok", "edge-ok"),
            variant("down", "edge-down")
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .arg("local")
        .arg(&dir)
        .arg("--init")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("PackageVariant default/ok: status updated: Ready=True"),
        "{stdout}\n{stderr}"
    );
    let git_says = "Could not read from remote repository";
    assert_eq!(stderr.matches(git_says).count(), 1, "{stderr}");
    let failed: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("default/down") && l.contains(git_says))
        .collect();
    assert!(!failed.is_empty(), "{stdout}");
    for line in stdout.lines().chain(stderr.lines()) {
        assert!(line.matches(git_says).count() <= 1, "said twice: {line}");
    }
    assert!(
        failed
            .iter()
            .all(|l| l.contains("Repository default/edge-down")),
        "{failed:?}"
    );
    // The reachable repository got its draft.
    let refs = Command::new("git")
        .arg("--git-dir")
        .arg(dir.join("repos/edge-ok"))
        .args(["for-each-ref", "--format=%(refname)"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&refs.stdout).contains("refs/heads/drafts/web/"),
        "{}",
        String::from_utf8_lossy(&refs.stdout)
    );
}
