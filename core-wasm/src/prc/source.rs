//! The source phase's content (`PRC/source.go`): what a new revision's
//! files are. `init` is computed here entirely; the other sources need the
//! content of other revisions, which the host reads and hands in.

use serde_json::{json, Map, Value};

use crate::api::package_revision::v1alpha2::{Init, PackageRevision};
use crate::render::package::Files;
use crate::yaml::{self, Format};

/// `init`, `clone`, `copy` or `upgrade`: what `status.creationSource`
/// records once the source ran.
pub fn creation_source(pr: &PackageRevision) -> Result<Option<&'static str>, String> {
    if !pr.status.creation_source.is_empty() {
        return Ok(None);
    }
    let Some(s) = &pr.spec.source else {
        return Ok(None);
    };
    // The CRD's CEL rule refuses this at the API server; where objects do
    // not pass one (local mode), the controller says it.
    let set: Vec<&str> = [
        ("init", s.init.is_some()),
        ("cloneFrom", s.clone_from.is_some()),
        ("copyFrom", s.copy_from.is_some()),
        ("upgrade", s.upgrade.is_some()),
    ]
    .into_iter()
    .filter_map(|(n, on)| on.then_some(n))
    .collect();
    if set.len() > 1 {
        return Err(format!(
            "spec.source: exactly one of init, cloneFrom, copyFrom, or upgrade must be set, not {}",
            set.join(" and ")
        ));
    }
    Ok(Some(if s.init.is_some() {
        "init"
    } else if s.clone_from.is_some() {
        "clone"
    } else if s.copy_from.is_some() {
        "copy"
    } else if s.upgrade.is_some() {
        "upgrade"
    } else {
        return Err("source has no fields set".to_string());
    }))
}

/// `initPackage`: kpt's `DefaultInitializer` for `package_name` — a
/// `Kptfile`, a `README.md` and the abstract `package-context.yaml` — under
/// `init.subpackage` when set (whose Kptfile also takes the package's
/// name).
pub fn init_package(package_name: &str, init: &Init) -> Result<Files, String> {
    let fail = |e: String| format!("failed to initialize pkg {package_name:?}: {e}");
    let dir = init.subpackage.trim_matches('/');
    let at = |file: &str| {
        if dir.is_empty() {
            file.to_string()
        } else {
            format!("{dir}/{file}")
        }
    };
    let mut files = Files::new();
    files.insert(at("Kptfile"), kptfile(package_name, init).map_err(fail)?);
    files.insert(at("README.md"), readme(package_name, &init.description));
    files.insert(
        at("package-context.yaml"),
        ABSTRACT_PACKAGE_CONTEXT.to_string(),
    );
    Ok(files)
}

/// kpt's `AbstractPkgContext`.
pub const ABSTRACT_PACKAGE_CONTEXT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: example\n";

/// The Kptfile as kpt encodes its `KptFile` struct: `info` always present,
/// its `site`, `description` and `keywords` only when set.
fn kptfile(name: &str, init: &Init) -> Result<String, String> {
    let mut info = Map::new();
    if !init.site.is_empty() {
        info.insert("site".into(), json!(init.site));
    }
    if !init.description.is_empty() {
        info.insert("description".into(), json!(init.description));
    }
    if !init.keywords.is_empty() {
        info.insert("keywords".into(), json!(init.keywords));
    }
    let k = json!({
        "apiVersion": "kpt.dev/v1",
        "kind": "Kptfile",
        "metadata": {
            "name": name,
            "annotations": {"config.kubernetes.io/local-config": "true"},
        },
        "info": Value::Object(info),
    });
    yaml::emit_stream(&[yaml::from_json_ordered(&k)], Format::Kyaml).map_err(|e| e.to_string())
}

/// kpt's man-page template, as `html/template` fills it (the name and
/// description HTML-escaped), with single quotes turned into backticks.
fn readme(name: &str, description: &str) -> String {
    let (n, d) = (html_escape(name), html_escape(description));
    let text = format!(
        "# {n}\n\n## Description\n{d}\n\n## Usage\n\n### Fetch the package\n'kpt pkg get REPO_URI[.git]/PKG_PATH[@VERSION] {n}'\nDetails: https://kpt.dev/reference/cli/pkg/get/\n\n### View package content\n'kpt pkg tree {n}'\nDetails: https://kpt.dev/reference/cli/pkg/tree/\n\n### Apply the package\n'''\nkpt live init {n}\nkpt live apply {n} --reconcile-timeout=2m --output=table\n'''\nDetails: https://kpt.dev/reference/cli/live/\n"
    );
    text.replace('\'', "`")
}

/// `html/template`'s escaping of text: `&`, `'`, `<`, `>`, `"`, `+` and
/// NUL.
fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#39;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&#34;"),
            '+' => out.push_str("&#43;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_writes_kpts_three_files() {
        let init = Init {
            description: "my description".into(),
            keywords: vec!["kw1".into(), "kw2".into()],
            site: "https://example.com".into(),
            ..Init::default()
        };
        let files = init_package("my-pkg", &init).unwrap();
        assert_eq!(
            files["Kptfile"],
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: my-pkg\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ninfo:\n  site: https://example.com\n  description: my description\n  keywords:\n  - kw1\n  - kw2\n"
        );
        assert!(files["README.md"].starts_with("# my-pkg\n\n## Description\nmy description\n"));
        assert!(files["README.md"].contains("`kpt pkg tree my-pkg`"));
        assert!(files["README.md"].contains("```\nkpt live init my-pkg\n"));
        assert_eq!(files["package-context.yaml"], ABSTRACT_PACKAGE_CONTEXT);
    }

    #[test]
    fn an_empty_init_still_has_info_and_escapes_like_html_template() {
        let files = init_package("p", &Init::default()).unwrap();
        assert!(
            files["Kptfile"].ends_with("info: {}\n"),
            "{}",
            files["Kptfile"]
        );
        let init = Init {
            description: "it's <b>&</b>".into(),
            ..Init::default()
        };
        let readme = &init_package("p", &init).unwrap()["README.md"];
        assert!(
            readme.contains("it&#39;s &lt;b&gt;&amp;&lt;/b&gt;"),
            "{readme}"
        );
    }
}
