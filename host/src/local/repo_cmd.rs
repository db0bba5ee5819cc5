//! `porch-variants repo reg|get|unreg`: the directory's Repository objects,
//! as `porchctl repo` registers, lists and unregisters a cluster's.
//!
//! * `reg [URL]` writes `repo-<name>.yaml` with the Repository (and, with
//!   basic-auth credentials, its `<name>-auth` Secret, which the Repository
//!   names in `spec.git.secretRef`). Without a URL the repository is a
//!   local one, `repos/<name>`, which `local --init` creates.
//! * `get [NAME...]` prints porchctl's table: name, type, content,
//!   deployment, ready, address.
//! * `unreg NAME` removes the Repository and the Secret its `secretRef`
//!   names (unless `--keep-auth-secret`): a file left without objects is
//!   removed, another file is written without those documents.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::cli::{LocalError, RpkgOutput};
use super::{ns_or_default, read_objects};
use crate::store::remote::is_remote_url;

/// `repo` verbs.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum RepoCommand {
    /// Register a repository: writes its Repository object (and a Secret
    /// for --repo-basic-username/--repo-basic-password) into the directory.
    #[command(visible_alias = "register")]
    Reg(RegArgs),
    /// List the directory's repositories.
    Get {
        /// Repository names (all when none).
        names: Vec<String>,
        /// Every namespace.
        #[arg(long, short = 'A')]
        all_namespaces: bool,
    },
    /// Unregister a repository: removes its Repository object (and the
    /// Secret its spec.git.secretRef names).
    #[command(visible_alias = "unregister")]
    Unreg {
        /// The repository's name.
        name: String,
        /// Keep the Secret the Repository's spec.git.secretRef names.
        #[arg(long)]
        keep_auth_secret: bool,
    },
}

/// `repo reg` arguments (porchctl's).
#[derive(Debug, Clone, clap::Args)]
pub struct RegArgs {
    /// The Git repository's URL; none for a local repository under repos/.
    pub url: Option<String>,
    /// Name of the Repository (default: the URL's last path segment,
    /// without `.git`).
    #[arg(long)]
    pub name: Option<String>,
    /// Brief description of the repository.
    #[arg(long)]
    pub description: Option<String>,
    /// Branch where finalized packages are committed.
    #[arg(long, default_value = "main")]
    pub branch: String,
    /// Directory within the repository where packages are found.
    #[arg(long, default_value = "/")]
    pub directory: String,
    /// A deployment repository: its published packages are
    /// deployment-ready.
    #[arg(long)]
    pub deployment: bool,
    /// Username for basic authentication (with --repo-basic-password).
    #[arg(long)]
    pub repo_basic_username: Option<String>,
    /// Password for basic authentication, written to the Secret in the
    /// directory (as porchctl writes it to the cluster).
    #[arg(long)]
    pub repo_basic_password: Option<String>,
}

/// Runs a `repo` verb on `dir`.
pub fn run(
    dir: &Path,
    namespace: &str,
    cmd: &RepoCommand,
    output: RpkgOutput,
    validation: super::Validation,
) -> Result<(), LocalError> {
    match cmd {
        RepoCommand::Reg(a) => register(dir, namespace, a, validation),
        RepoCommand::Get {
            names,
            all_namespaces,
        } => get(dir, namespace, names, *all_namespaces, output, validation),
        RepoCommand::Unreg {
            name,
            keep_auth_secret,
        } => unregister(dir, namespace, name, *keep_auth_secret, validation),
    }
}

/// The Repository objects of `dir`, each with the file it was read from.
fn repositories(
    dir: &Path,
    validation: super::Validation,
) -> Result<Vec<(Value, PathBuf)>, LocalError> {
    let objects = read_objects(dir, validation)?;
    Ok(objects
        .objects
        .into_iter()
        .zip(objects.sources)
        .filter(|(o, _)| o["kind"] == "Repository")
        .map(|(o, source)| {
            let file = source
                .rsplit_once(", document ")
                .map_or(source.as_str(), |(f, _)| f)
                .to_string();
            (o, PathBuf::from(file))
        })
        .collect())
}

fn namespace_of(o: &Value) -> String {
    ns_or_default(o["metadata"]["namespace"].as_str().unwrap_or_default())
}

/// The name porchctl gives a repository registered without `--name`.
fn name_from_url(url: &str) -> String {
    let last = url
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .next()
        .unwrap_or_default();
    last.strip_suffix(".git").unwrap_or(last).to_string()
}

fn register(
    dir: &Path,
    namespace: &str,
    a: &RegArgs,
    validation: super::Validation,
) -> Result<(), LocalError> {
    let usage = |m: String| Err(LocalError::Usage(m));
    if let Some(url) = &a.url {
        if !is_remote_url(url) {
            return usage(format!(
                "{url:?} is not a Git URL (https, http, ssh, git or file); \
                 without a URL the repository is a local one under repos/"
            ));
        }
    }
    let name = match (&a.name, &a.url) {
        (Some(n), _) => n.clone(),
        (None, Some(url)) => name_from_url(url),
        (None, None) => return usage("a local repository needs --name".into()),
    };
    pv_core::variantset::selector::is_dns1123_subdomain(&name)
        .or_else(|e| usage(format!("repository name {name:?}: {e}")))?;
    if repositories(dir, validation)?
        .iter()
        .any(|(o, _)| o["metadata"]["name"] == name.as_str() && namespace_of(o) == namespace)
    {
        return usage(format!(
            "repository {namespace}/{name} is already registered"
        ));
    }
    let auth = match (&a.repo_basic_username, &a.repo_basic_password) {
        (Some(u), Some(p)) => Some((u.clone(), p.clone())),
        (None, None) => None,
        _ => return usage("--repo-basic-username and --repo-basic-password go together".into()),
    };
    if auth.is_some() && !a.url.as_deref().is_some_and(|u| u.starts_with("http")) {
        return usage("basic-auth credentials apply to http(s) URLs only".into());
    }
    let mut git = json!({"branch": a.branch, "directory": a.directory});
    if let Some(url) = &a.url {
        git["repo"] = json!(url);
    }
    let secret_name = format!("{name}-auth");
    if auth.is_some() {
        git["secretRef"] = json!({"name": secret_name});
    }
    let mut spec = json!({"type": "git", "content": "Package", "git": git});
    if let Some(d) = &a.description {
        spec["description"] = json!(d);
    }
    if a.deployment {
        spec["deployment"] = json!(true);
    }
    let mut metadata = json!({"name": name});
    if namespace != "default" {
        metadata["namespace"] = json!(namespace);
    }
    let mut docs = Vec::new();
    if let Some((user, password)) = auth {
        docs.push(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": metadata.clone().as_object().map(|m| {
                let mut m = m.clone();
                m.insert("name".into(), json!(secret_name));
                Value::Object(m)
            }),
            "type": "kubernetes.io/basic-auth",
            "stringData": {"username": user, "password": password},
        }));
    }
    docs.push(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1",
        "kind": "Repository",
        "metadata": metadata,
        "spec": spec,
    }));
    let nodes: Vec<_> = docs.iter().map(pv_core::yaml::from_json_ordered).collect();
    let text = pv_core::yaml::emit_stream(&nodes, pv_core::yaml::Format::Kyaml)
        .map_err(|e| LocalError::Usage(format!("writing the Repository: {e}")))?;
    let path = dir.join(format!("repo-{name}.yaml"));
    if path.exists() {
        return usage(format!(
            "{} exists: move it or choose another --name",
            path.display()
        ));
    }
    crate::store::replace_file(&path, text.as_bytes())?;
    crate::outln!(
        "{name} registered ({}); `porch-variants local {}` syncs it",
        path.display(),
        dir.display()
    );
    Ok(())
}

fn get(
    dir: &Path,
    namespace: &str,
    names: &[String],
    all_namespaces: bool,
    output: RpkgOutput,
    validation: super::Validation,
) -> Result<(), LocalError> {
    let repos: Vec<Value> = repositories(dir, validation)?
        .into_iter()
        .map(|(o, _)| o)
        .filter(|o| all_namespaces || namespace_of(o) == namespace)
        .filter(|o| {
            names.is_empty()
                || names
                    .iter()
                    .any(|n| o["metadata"]["name"].as_str() == Some(n))
        })
        .collect();
    for n in names {
        if !repos
            .iter()
            .any(|o| o["metadata"]["name"].as_str() == Some(n))
        {
            return Err(LocalError::Usage(format!(
                "repository {namespace}/{n} not found"
            )));
        }
    }
    match output {
        RpkgOutput::Json | RpkgOutput::Yaml => {
            super::rpkg::print_objects(&repos, output, names.len() == 1)?;
        }
        RpkgOutput::Text | RpkgOutput::Wide => {
            let mut header = vec!["NAME", "TYPE", "CONTENT", "DEPLOYMENT", "READY", "ADDRESS"];
            if all_namespaces {
                header.insert(0, "NAMESPACE");
            }
            let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
            for o in &repos {
                let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
                let name = s(&o["metadata"]["name"]);
                let ready = o["status"]["conditions"]
                    .as_array()
                    .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
                    .map(|c| s(&c["status"]))
                    .unwrap_or_default();
                let address = match o["spec"]["git"]["repo"].as_str() {
                    Some(url) if !url.is_empty() => url.to_string(),
                    _ => format!("repos/{name}"),
                };
                let mut row = vec![
                    name,
                    s(&o["spec"]["type"]),
                    s(&o["spec"]["content"]),
                    if o["spec"]["deployment"] == true {
                        "true".into()
                    } else {
                        String::new()
                    },
                    ready,
                    address,
                ];
                if all_namespaces {
                    row.insert(0, namespace_of(o));
                }
                rows.push(row);
            }
            for line in super::rpkg::table_lines(&rows) {
                crate::outln!("{line}");
            }
        }
    }
    Ok(())
}

fn unregister(
    dir: &Path,
    namespace: &str,
    name: &str,
    keep_auth_secret: bool,
    validation: super::Validation,
) -> Result<(), LocalError> {
    let Some((repo, _)) = repositories(dir, validation)?
        .into_iter()
        .find(|(o, _)| o["metadata"]["name"] == name && namespace_of(o) == namespace)
    else {
        return Err(LocalError::Usage(format!(
            "repository {namespace}/{name} not found"
        )));
    };
    let secret = repo["spec"]["git"]["secretRef"]["name"]
        .as_str()
        .filter(|s| !s.is_empty() && !keep_auth_secret)
        .map(str::to_string);
    let gone = |o: &Value| {
        let same_ns = namespace_of(o) == namespace;
        (o["kind"] == "Repository" && o["metadata"]["name"] == name && same_ns)
            || (o["kind"] == "Secret"
                && secret
                    .as_deref()
                    .is_some_and(|s| o["metadata"]["name"] == s)
                && same_ns)
    };
    // Every file holding a document to remove is rewritten (or removed).
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| LocalError::Usage(format!("reading {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| LocalError::Usage(format!("reading {}: {e}", path.display())))?;
        let docs = pv_core::yaml::parse_stream(&text)
            .map_err(|e| LocalError::Usage(format!("{}: {e}", path.display())))?;
        let mut kept = Vec::new();
        let mut removed = false;
        for doc in docs {
            let value = pv_core::yaml::to_json(&doc).unwrap_or(Value::Null);
            if value.get("kind").is_some() && gone(&value) {
                removed = true;
            } else {
                kept.push(doc);
            }
        }
        if !removed {
            continue;
        }
        let has_objects = kept
            .iter()
            .any(|d| pv_core::yaml::to_json(d).is_ok_and(|v| v.get("kind").is_some()));
        if has_objects {
            let text = pv_core::yaml::emit_stream(&kept, pv_core::yaml::Format::Kyaml)
                .map_err(|e| LocalError::Usage(format!("{}: {e}", path.display())))?;
            crate::store::replace_file(&path, text.as_bytes())?;
        } else {
            std::fs::remove_file(&path)
                .map_err(|e| LocalError::Usage(format!("removing {}: {e}", path.display())))?;
        }
    }
    crate::outln!("{name} unregistered");
    Ok(())
}
