//! Which executor runs an image, as porch-server decides it from the
//! FunctionConfigs ([`crate::api::function_config`]): a FunctionConfig
//! names the image (`spec.image`, the name without registry or tag) and
//! the registries it may come from (`spec.prefixes`, `""` for the default
//! catalog registry, compared whole); of the configs that name it, a Go
//! executor whose tags match runs the builtin it names, else a binary
//! executor whose tags match runs its binary, else the image runs in a pod
//! (Porch's function runner). Tags are Masterminds semver constraints
//! (`~0.2`, `>=1.0 <2.0`, `1.x`, `a || b`, `!=v0.1.4`, `*`); a tag that is
//! not a version (`latest`) matches only a constraint equal to it.
//!
//! An image no FunctionConfig names is not this module's: the render runs
//! it as it would without any (the builtin of its name when there is one).

use crate::api::function_config::FunctionConfig;
use crate::render::image;

/// What runs an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Executor {
    /// The builtin of this name.
    Builtin(String),
    /// This binary.
    Binary(String),
    /// A pod: Porch's function runner (or another runtime of the host).
    Pod,
}

/// The executor `configs` give the resolved image `resolved` (with its
/// tag, as [`image::resolve`] makes it); `None` when no config names it.
/// `default_prefix` is the registry `""` stands for; a config without
/// prefixes takes the default registry only. `binaries` is whether a
/// binary may run here: when not, a binary executor is passed over.
pub fn select(
    configs: &[FunctionConfig],
    resolved: &str,
    default_prefix: &str,
    binaries: bool,
) -> Option<Executor> {
    let (name, tag, _) = image::split(resolved);
    let tag = tag.unwrap_or("latest");
    let (prefix, base) = match name.rfind('/') {
        Some(i) => (&name[..i], &name[i + 1..]),
        None => ("", name),
    };
    let default = default_prefix.trim_end_matches('/');
    let named: Vec<&FunctionConfig> = configs
        .iter()
        .filter(|c| c.spec.image == base)
        .filter(|c| {
            let allows = |p: &str| {
                let p = p.trim_end_matches('/');
                let p = if p.is_empty() { default } else { p };
                p == prefix || (prefix.is_empty() && p == default)
            };
            if c.spec.prefixes.is_empty() {
                allows("")
            } else {
                c.spec.prefixes.iter().any(|p| allows(p))
            }
        })
        .collect();
    if named.is_empty() {
        return None;
    }
    for c in &named {
        if let Some(g) = &c.spec.go_executor {
            if matches_any(tag, &g.tags) {
                let id = g.id.clone().unwrap_or_else(|| c.metadata.name.clone());
                return Some(Executor::Builtin(id));
            }
        }
    }
    if binaries {
        for c in &named {
            if let Some(b) = &c.spec.binary_executor {
                if matches_any(tag, &b.tags) {
                    return Some(Executor::Binary(b.path.clone()));
                }
            }
        }
    }
    Some(Executor::Pod)
}

/// Masterminds' `MatchesAnyConstraint`: none matches nothing, `*` all; a
/// tag that is not a version matches a constraint equal to it.
pub fn matches_any(tag: &str, constraints: &[String]) -> bool {
    if constraints.is_empty() {
        return false;
    }
    if constraints.iter().any(|c| c.trim() == "*") {
        return true;
    }
    let Some(version) = lenient_version(tag) else {
        return constraints.iter().any(|c| c == tag);
    };
    constraints.iter().any(|c| satisfies(&version, c))
}

/// A version as Masterminds' `NewVersion` reads it: an optional `v`, and
/// the minor and patch numbers optional (`v0.1` is 0.1.0).
fn lenient_version(text: &str) -> Option<semver::Version> {
    let t = text.trim().strip_prefix(['v', 'V']).unwrap_or(text.trim());
    let (core, rest) = match t.find(['-', '+']) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let mut full: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
    while full.len() < 3 {
        full.push("0".into());
    }
    semver::Version::parse(&format!("{}{rest}", full.join("."))).ok()
}

/// Whether `version` satisfies one constraint string: alternatives split
/// by `||`, each a list of comparators (separated by spaces or commas,
/// an operator maybe apart from its version), all of which must hold.
fn satisfies(version: &semver::Version, constraint: &str) -> bool {
    constraint
        .split("||")
        .any(|alternative| match comparators(alternative) {
            Some(list) => !list.is_empty() && list.iter().all(|c| c.holds(version)),
            None => false,
        })
}

/// One comparator: semver's, or Masterminds' `!=`.
enum Check {
    Req(semver::Comparator),
    Not(semver::Version),
}

impl Check {
    fn holds(&self, v: &semver::Version) -> bool {
        match self {
            Check::Req(c) => c.matches(v),
            Check::Not(n) => v != n,
        }
    }
}

/// The comparators of one alternative; `None` when one does not parse.
fn comparators(alternative: &str) -> Option<Vec<Check>> {
    let tokens: Vec<&str> = alternative
        .split([' ', ',', '\t'])
        .filter(|t| !t.is_empty())
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        // A hyphen range: `a - b`.
        if tokens.get(i + 1) == Some(&"-") {
            let low = lenient_version(tokens[i])?;
            let high = tokens.get(i + 2)?;
            out.push(Check::Req(comparator(&format!(">={low}"))?));
            out.push(Check::Req(comparator(&format!("<={}", strip_v(high)))?));
            i += 3;
            continue;
        }
        let mut token = tokens[i].to_string();
        // An operator standing alone takes the next token.
        if token.chars().all(|c| "<>=!~^".contains(c)) {
            token.push_str(tokens.get(i + 1)?);
            i += 1;
        }
        i += 1;
        let (op, version) = split_operator(&token);
        if op == "!=" {
            out.push(Check::Not(lenient_version(version)?));
            continue;
        }
        let op = match op {
            "~>" => "~",
            "=<" => "<=",
            "=>" => ">=",
            other => other,
        };
        let version = strip_v(version).replace(['x', 'X'], "*");
        out.push(Check::Req(comparator(&format!("{op}{version}"))?));
    }
    Some(out)
}

fn split_operator(token: &str) -> (&str, &str) {
    let end = token
        .find(|c: char| !"<>=!~^".contains(c))
        .unwrap_or(token.len());
    (&token[..end], &token[end..])
}

fn strip_v(version: &str) -> &str {
    version.strip_prefix(['v', 'V']).unwrap_or(version)
}

fn comparator(text: &str) -> Option<semver::Comparator> {
    semver::Comparator::parse(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::image::DEFAULT_PREFIX;

    fn config(yaml_json: serde_json::Value) -> FunctionConfig {
        serde_json::from_value(yaml_json).expect("a FunctionConfig")
    }

    /// Entries of Porch's default set (`deployments/porch/
    /// 23-function-configurations.yaml`).
    fn defaults() -> Vec<FunctionConfig> {
        let prefixes = serde_json::json!(["", "ghcr.io/kptdev/krm-functions-catalog"]);
        vec![
            config(
                serde_json::json!({"metadata": {"name": "apply-setters"}, "spec": {
                "image": "apply-setters", "prefixes": prefixes,
                "podExecutor": {"tags": ["~0.2"], "timeToLive": "30m"},
                "binaryExecutor": {"tags": ["~0.3"], "path": "apply-setters"}}}),
            ),
            config(
                serde_json::json!({"metadata": {"name": "set-namespace"}, "spec": {
                "image": "set-namespace", "prefixes": prefixes,
                "binaryExecutor": {"tags": ["~0.4"], "path": "set-namespace"},
                "goExecutor": {"tags": ["v0.4.5"], "id": "set-namespace"}}}),
            ),
            config(
                serde_json::json!({"metadata": {"name": "set-annotations"}, "spec": {
                "image": "set-annotations", "prefixes": prefixes,
                "podExecutor": {"tags": ["~0.1"]},
                "binaryExecutor": {"tags": ["~0.1 != v0.1.4"], "path": "set-annotations"}}}),
            ),
            config(
                serde_json::json!({"metadata": {"name": "starlark"}, "spec": {
                "image": "starlark", "prefixes": prefixes,
                "podExecutor": {"tags": ["~0.4"]},
                "goExecutor": {"tags": ["v0.5.5"]}}}),
            ),
        ]
    }

    fn pick(image: &str, binaries: bool) -> Option<Executor> {
        let resolved = image::resolve(image, "", DEFAULT_PREFIX);
        select(&defaults(), &resolved, DEFAULT_PREFIX, binaries)
    }

    #[test]
    fn porchs_default_set_chooses_as_porch_server_does() {
        // Pod tag ~0.2 matches, binary ~0.3 does not.
        assert_eq!(
            pick(
                "ghcr.io/kptdev/krm-functions-catalog/apply-setters:v0.2",
                true
            ),
            Some(Executor::Pod)
        );
        assert_eq!(
            pick("apply-setters:v0.3.1", true),
            Some(Executor::Binary("apply-setters".into()))
        );
        // The builtin at its exact tag, the binary at another 0.4.
        assert_eq!(
            pick("set-namespace:v0.4.5", true),
            Some(Executor::Builtin("set-namespace".into()))
        );
        assert_eq!(
            pick("set-namespace:v0.4.1", true),
            Some(Executor::Binary("set-namespace".into()))
        );
        // Where no binary may run, the pod.
        assert_eq!(pick("set-namespace:v0.4.1", false), Some(Executor::Pod));
        // An unlisted registry: not named by any config.
        assert_eq!(pick("gcr.io/kpt-fn/set-namespace:v0.4.1", true), None);
        // `!=` inside one constraint.
        assert_eq!(pick("set-annotations:v0.1.4", true), Some(Executor::Pod));
        assert_eq!(
            pick("set-annotations:v0.1.3", true),
            Some(Executor::Binary("set-annotations".into()))
        );
        // No id: the object's name.
        assert_eq!(
            pick("starlark:v0.5.5", true),
            Some(Executor::Builtin("starlark".into()))
        );
        // Not named at all.
        assert_eq!(pick("set-labels:v0.1", true), None);
    }

    #[test]
    fn tags_match_as_masterminds_semver_does() {
        let yes = [
            ("v0.2", "~0.2"),
            ("v0.2.9", "~0.2"),
            ("v1.4.0", ">=1.2 <2"),
            ("1.4.0", ">= 1.2, < 2"),
            ("v1.2.7", "1.2.x"),
            ("v2.0.0", "~1 || ^2"),
            ("v1.3.0", "1.2 - 1.4"),
            ("latest", "latest"),
            ("anything", "*"),
        ];
        for (tag, c) in yes {
            assert!(matches_any(tag, &[c.to_string()]), "{tag} {c}");
        }
        let no = [
            ("v0.3.0", "~0.2"),
            ("v2.0.0", ">=1.2 <2"),
            ("v0.1.4", "~0.1 != v0.1.4"),
            ("latest", "~0.1"),
            ("v1.0.0", "not a constraint"),
        ];
        for (tag, c) in no {
            assert!(!matches_any(tag, &[c.to_string()]), "{tag} {c}");
        }
        assert!(!matches_any("v1.0.0", &[]), "no constraint matches nothing");
    }

    #[test]
    fn a_config_without_prefixes_takes_the_default_registry() {
        let c = config(serde_json::json!({"metadata": {"name": "x"}, "spec": {
            "image": "set-labels", "podExecutor": {"tags": ["*"]}}}));
        let at = |image: &str| select(std::slice::from_ref(&c), image, DEFAULT_PREFIX, true);
        assert_eq!(
            at(&format!("{DEFAULT_PREFIX}/set-labels:v0.1")),
            Some(Executor::Pod)
        );
        assert_eq!(at("example.com/fns/set-labels:v0.1"), None);
    }

    #[test]
    fn invalid_configs_name_their_field() {
        let none = config(serde_json::json!({"spec": {"image": "a"}}));
        assert_eq!(
            none.invalid().as_deref(),
            Some("spec: At least one configuration must be specified")
        );
        let no_path = config(serde_json::json!({"spec": {"image": "a",
            "binaryExecutor": {"tags": ["*"]}}}));
        assert_eq!(
            no_path.invalid().as_deref(),
            Some("spec.binaryExecutor.path: must not be empty")
        );
        assert_eq!(defaults()[0].invalid(), None);
    }

    /// Records the functions a render asks the host for; each is missing.
    #[derive(Default)]
    struct Asked(Vec<crate::render::FunctionRef>);

    impl crate::render::FunctionRuntime for Asked {
        fn run(
            &mut self,
            function: &crate::render::FunctionRef,
            _: &str,
        ) -> Result<crate::render::RunOutput, crate::render::RuntimeError> {
            self.0.push(function.clone());
            Err(crate::render::RuntimeError::NotFound)
        }
    }

    /// What a render of a package whose pipeline runs `set-labels:v0.1`
    /// asks the host for, with `configs` (and exec allowed or not).
    fn asked(configs: serde_json::Value, allow_exec: bool) -> Vec<(String, String)> {
        let files = crate::render::Files::from([
            (
                "Kptfile".to_string(),
                "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\npipeline:\n  mutators:\n  - image: set-labels:v0.1\n    configMap:\n      app: web\n".to_string(),
            ),
            (
                "deployment.yaml".to_string(),
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n".to_string(),
            ),
        ]);
        let opts = crate::render::RenderOptions {
            allow_exec,
            function_configs: serde_json::from_value(configs).expect("configs"),
            ..crate::render::RenderOptions::default()
        };
        let mut runtime = Asked::default();
        let out = crate::render::render(&files, &opts, &mut runtime);
        if runtime.0.is_empty() {
            assert!(out.failure.is_none(), "{:?}", out.failure);
            assert!(out.files["deployment.yaml"].contains("app: web"));
        }
        runtime.0.into_iter().map(|f| (f.image, f.exec)).collect()
    }

    #[test]
    fn a_render_runs_each_image_where_its_function_config_says() {
        let image = format!("{DEFAULT_PREFIX}/set-labels:v0.1");
        // No config: the builtin.
        assert_eq!(asked(serde_json::json!([]), false), vec![]);
        // A pod executor: the host, never the builtin.
        let pod = serde_json::json!([{"metadata": {"name": "set-labels"},
            "spec": {"image": "set-labels", "podExecutor": {"tags": ["~0.1"]}}}]);
        assert_eq!(asked(pod, false), vec![(image.clone(), String::new())]);
        // A Go executor at the tag: the builtin of its id.
        let go = serde_json::json!([{"metadata": {"name": "labels"},
            "spec": {"image": "set-labels", "goExecutor": {"tags": ["v0.1"], "id": "set-labels"}}}]);
        assert_eq!(asked(go, false), vec![]);
        // A binary executor: its path, where binaries may run; else a pod.
        let binary = serde_json::json!([{"metadata": {"name": "set-labels"},
            "spec": {"image": "set-labels", "binaryExecutor": {"tags": ["*"], "path": "/opt/fns/set-labels"}}}]);
        assert_eq!(
            asked(binary.clone(), true),
            vec![(image.clone(), "/opt/fns/set-labels".to_string())]
        );
        assert_eq!(asked(binary, false), vec![(image, String::new())]);
    }
}
