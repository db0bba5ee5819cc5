//! The catalog's `search-replace` function (`functions/go/search-replace`):
//! fields matched by path (`by-path`, `*` one element, `**` any number,
//! `a[*]` any item), by value (`by-value`, or `by-value-regex`, a partial
//! match) and by file (`by-file-path`, a doublestar glob) are reported, and
//! given a new value (`put-value`, with `${N}` filled from the regex's
//! groups) or a line comment (`put-comment`; on a matched sequence, its
//! key takes the comment). An absolute `by-path` with only `put-value`
//! sets the field, creating it.
//!
//! Results: `Mutated field value to "V"` (or `Matched field value "V"`)
//! with the field and file, or `no matches`; a bad config is the error
//! result `failed to perform search-replace operation: "…"`.

use crate::render::annotations as ann;
use crate::render::krmignore::glob_match;
use crate::render::result::FnResult;
use crate::yaml::{self, Kind, Node, Style};

use super::set_annotations::{data_map, file_annotation};
use super::set_namespace::go_quote;
use super::{field_result, FnInput, FnOutput};

const MATCHERS: [&str; 6] = [
    "by-value",
    "by-file-path",
    "by-value-regex",
    "by-path",
    "put-value",
    "put-comment",
];

/// The function's config.
#[derive(Default)]
struct Config {
    by_value: String,
    by_value_regex: String,
    by_path: String,
    by_file_path: String,
    put_value: String,
    put_comment: String,
    regex: Option<regex::Regex>,
}

/// A field matched: where, and its value afterwards.
struct Found {
    file: String,
    field: String,
    value: String,
}

/// Runs `search-replace` on the items.
pub fn run(input: FnInput) -> FnOutput {
    let mut items = input.items;
    let config = match decode(input.function_config.as_ref()) {
        Ok(c) => c,
        Err(e) => return failed(items, e),
    };
    let mut found = Vec::new();
    for item in &mut items {
        if let Err(e) = perform(&config, item, &mut found) {
            return failed(items, e);
        }
    }
    let mutating = !config.put_comment.is_empty() || !config.put_value.is_empty();
    let results = if found.is_empty() {
        vec![FnResult {
            message: "no matches".into(),
            ..FnResult::default()
        }]
    } else {
        found
            .into_iter()
            .map(|f| {
                let message = if mutating {
                    format!("Mutated field value to {}", go_quote(&f.value))
                } else {
                    format!("Matched field value {}", go_quote(&f.value))
                };
                field_result(message, f.file, f.field)
            })
            .collect()
    };
    FnOutput {
        items,
        results,
        ..FnOutput::default()
    }
}

fn failed(items: Vec<Node>, error: String) -> FnOutput {
    FnOutput {
        items,
        results: vec![FnResult::error(format!(
            "failed to perform search-replace operation: {}",
            go_quote(&error)
        ))],
        stderr: error.clone(),
        failure: Some(error),
    }
}

fn decode(config: Option<&Node>) -> Result<Config, String> {
    let data = config.map(|c| data_map(c.root())).unwrap_or_default();
    for key in data.keys() {
        if !MATCHERS.contains(&key.as_str()) {
            let list: Vec<String> = MATCHERS.iter().map(|m| go_quote(m)).collect();
            return Err(format!(
                "invalid matcher {}, must be one of [{}]",
                go_quote(key),
                list.join(" ")
            ));
        }
    }
    let get = |k: &str| data.get(k).cloned().unwrap_or_default();
    let mut c = Config {
        by_value: get("by-value"),
        by_value_regex: get("by-value-regex"),
        by_path: get("by-path"),
        by_file_path: get("by-file-path"),
        put_value: get("put-value"),
        put_comment: get("put-comment"),
        regex: None,
    };
    if !c.by_value.is_empty() && !c.by_value_regex.is_empty() {
        return Err(r#"only one of ["by-value", "by-value-regex"] can be provided"#.into());
    }
    if !c.by_value_regex.is_empty() {
        c.regex = Some(
            regex::Regex::new(&c.by_value_regex)
                .map_err(|e| format!("error parsing regexp: {e}"))?,
        );
    }
    Ok(c)
}

fn perform(c: &Config, item: &mut Node, found: &mut Vec<Found>) -> Result<(), String> {
    let file = file_annotation(item, ann::PATH, ann::LEGACY_PATH);
    if !c.by_file_path.is_empty() && !glob_match(c.by_file_path.as_bytes(), file.as_bytes()) {
        return Ok(());
    }
    let mut walk = Walk { c, file, found };
    if c.put_value_by_path() {
        return walk.put_value_by_path(item.root_mut());
    }
    super::accept(&mut walk, item.root_mut(), "")
}

impl Config {
    /// An absolute path (no `*`, no `[`) and a literal to put.
    fn put_value_by_path(&self) -> bool {
        !self.by_path.is_empty()
            && self
                .by_path
                .split('.')
                .all(|e| !e.is_empty() && !e.contains('*'))
            && !self.by_path.contains('[')
            && self.by_value.is_empty()
            && self.by_value_regex.is_empty()
            && !self.put_value.is_empty()
    }

    fn path_match(&self, path: &str) -> bool {
        if self.by_path.is_empty() {
            return false;
        }
        let pattern: Vec<&str> = self.by_path.split('.').collect();
        let elems: Vec<&str> = path.trim_start_matches('.').split('.').collect();
        back_track_match(&elems, &pattern)
    }

    fn criteria_match(&self, value: &str, path: &str) -> bool {
        let path_match = self.path_match(path);
        let value_match = (!self.by_value.is_empty() && self.by_value == value)
            || self.regex.as_ref().is_some_and(|r| r.is_match(value));
        // Value and path, value alone (no path given), or path alone (no
        // value given).
        (value_match && (path_match || self.by_path.is_empty()))
            || (path_match && self.by_value.is_empty() && self.by_value_regex.is_empty())
    }

    /// `resolvePattern`: `${N}` filled from the regex's groups; a group
    /// left unresolved is an error.
    fn resolve(&self, value: &str, pattern: &str) -> Result<String, String> {
        let Some(re) = &self.regex else {
            return Ok(pattern.to_string());
        };
        let mut out = pattern.to_string();
        if let Some(caps) = re.captures(value) {
            for i in 1..caps.len() {
                let v = caps.get(i).map_or("", |m| m.as_str());
                out = out.replace(&format!("${{{i}}}"), v);
            }
        }
        let unresolved = regex::Regex::new(r"\$\{([0-9]+)\}").map_err(|e| e.to_string())?;
        if unresolved.is_match(&out) {
            return Err("unable to resolve capture groups".into());
        }
        Ok(out)
    }
}

/// `backTrackMatch`: `*` matches one element, `**` any number.
fn back_track_match(elems: &[&str], pattern: &[&str]) -> bool {
    let (n, m) = (elems.len(), pattern.len());
    let mut dp = vec![vec![false; m + 1]; n + 1];
    dp[0][0] = true;
    for j in 1..=m {
        if pattern[j - 1] == "**" {
            dp[0][j] = dp[0][j - 1];
        }
    }
    for i in 1..=n {
        for j in 1..=m {
            if pattern[j - 1] == "**" {
                dp[i][j] = dp[i][j - 1] || dp[i - 1][j];
            } else if pattern[j - 1] == "*" || element_match(elems[i - 1], pattern[j - 1]) {
                dp[i][j] = dp[i - 1][j - 1];
            }
        }
    }
    dp[n][m]
}

/// `elementMatch`: `a` matches `a`; `a[*]`, `*[*]` and `*[b]` match `a[b]`.
fn element_match(elem: &str, pattern: &str) -> bool {
    if elem == pattern {
        return true;
    }
    if !elem.contains('[') {
        return false;
    }
    let e: Vec<&str> = elem.split('[').collect();
    let p: Vec<&str> = pattern.split('[').collect();
    if p[0] != "*" && e[0] != p[0] {
        return false;
    }
    p.len() > 1 && (p[1] == "*]" || e.get(1) == Some(&p[1]))
}

/// A node as `yaml.String` prints it, trimmed.
fn node_text(node: &Node) -> String {
    yaml::emit_stream(&[Node::new_document(node.clone())], yaml::Format::Kyaml)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A line comment as yaml.v3 writes it (`# ` added when missing).
fn comment(text: &str) -> String {
    if text.starts_with('#') {
        text.to_string()
    } else {
        format!("# {text}")
    }
}

struct Walk<'a> {
    c: &'a Config,
    file: String,
    found: &'a mut Vec<Found>,
}

impl super::Visitor for Walk<'_> {
    /// `visitMapping`: `put-comment` on the keys of matched sequences.
    fn mapping(&mut self, object: &mut Node, path: &str) -> Result<(), String> {
        if self.c.put_comment.is_empty() {
            return Ok(());
        }
        for pair in object.content.chunks_mut(2) {
            let [key, value] = pair else { continue };
            if value.kind != Kind::Sequence || value.content.is_empty() {
                continue;
            }
            let to_key = format!("{path}.{}", key.value.trim());
            if !self.c.path_match(to_key.trim_start_matches('.')) {
                continue;
            }
            key.set_line_comment(comment(&self.c.put_comment));
            value.style = Style::FLOW;
            let shown = node_text(value);
            value.style = Style::plain();
            self.found.push(Found {
                file: self.file.clone(),
                field: format!("{} # {}", self.c.by_path, self.c.put_comment),
                value: shown,
            });
        }
        Ok(())
    }

    /// `matchAndReplace` on a scalar.
    fn scalar(&mut self, node: &mut Node, path: &str) -> Result<(), String> {
        if !self.c.criteria_match(&node.value, path) {
            return Ok(());
        }
        if !self.c.put_comment.is_empty() {
            let text = self.c.resolve(&node.value, &self.c.put_comment)?;
            node.set_line_comment(comment(&text));
        }
        if !self.c.put_value.is_empty() {
            node.value = self.c.resolve(&node.value, &self.c.put_value)?;
            node.tag = "".into();
        }
        if !self.file.is_empty() {
            self.found.push(Found {
                file: self.file.clone(),
                field: path.trim_start_matches('.').to_string(),
                value: node_text(node),
            });
        }
        Ok(())
    }
}

impl Walk<'_> {
    /// `putValueByPath`: the field at the absolute path set, maps created
    /// on the way.
    fn put_value_by_path(&mut self, root: &mut Node) -> Result<(), String> {
        let path: Vec<&str> = self.c.by_path.split('.').collect();
        let (last, parents) = path.split_last().ok_or("empty path")?;
        let mut node = root;
        for p in parents {
            node = node.upsert_map(p).map_err(|e| e.to_string())?;
        }
        let mut value = Node::new_scalar("", self.c.put_value.clone());
        value.tag = "".into();
        node.set(last, value).map_err(|e| e.to_string())?;
        self.found.push(Found {
            file: self.file.clone(),
            field: self.c.by_path.clone(),
            value: self.c.put_value.clone(),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with(resources: &str, data: &[(&str, &str)]) -> (String, Vec<FnResult>, Option<String>) {
        let mut d = Node::new_mapping();
        for (k, v) in data {
            d.set(k, Node::new_string(*v)).expect("set");
        }
        let mut config = Node::new_mapping();
        config
            .set("kind", Node::new_string("ConfigMap"))
            .expect("set");
        config.set("data", d).expect("set");
        let items = yaml::parse_stream(resources).expect("parses");
        let out = run(FnInput {
            items,
            function_config: Some(Node::new_document(config)),
        });
        let text = yaml::emit_stream(&out.items, yaml::Format::Kyaml).expect("emits");
        (text, out.results, out.failure)
    }

    const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: the-deployment\n  annotations:\n    internal.config.kubernetes.io/path: d.yaml\nspec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n      - name: a\n        image: nginx:1.7.1\n      - name: b\n        image: nginx:1.8\n";

    #[test]
    fn by_value_regex_puts_a_value_from_its_groups() {
        let (text, results, failure) = run_with(
            DEPLOYMENT,
            &[
                ("by-path", "spec.**.image"),
                ("by-value-regex", "nginx:(.*)"),
                ("put-value", "ubuntu:${1}"),
            ],
        );
        assert_eq!(failure, None);
        assert!(
            text.contains("image: ubuntu:1.7.1") && text.contains("image: ubuntu:1.8"),
            "{text}"
        );
        assert_eq!(results.len(), 2);
        assert_eq!(
            results[0].message,
            "Mutated field value to \"ubuntu:1.7.1\""
        );
        assert_eq!(
            results[0].field.as_ref().map(|f| f.path.as_str()),
            Some("spec.template.spec.containers[0].image")
        );
    }

    #[test]
    fn an_absolute_path_sets_the_field_creating_it() {
        let (text, results, _) = run_with(
            DEPLOYMENT,
            &[("by-path", "spec.strategy.type"), ("put-value", "Recreate")],
        );
        assert!(text.contains("  strategy:\n    type: Recreate\n"), "{text}");
        assert_eq!(results[0].message, "Mutated field value to \"Recreate\"");
        let (text, _, _) = run_with(
            DEPLOYMENT,
            &[("by-path", "spec.replicas"), ("put-value", "5")],
        );
        assert!(text.contains("replicas: 5\n"), "{text}");
    }

    #[test]
    fn put_comment_tags_matched_fields_and_sequences() {
        let (text, results, _) = run_with(
            "a:\n  env:\n  - dev\n  - prod\n  host: nginx.com\n",
            &[("by-path", "a.*"), ("put-comment", "kpt-set: ${x}")],
        );
        assert!(text.contains("env: # kpt-set: ${x}\n"), "{text}");
        assert!(text.contains("host: nginx.com # kpt-set: ${x}\n"), "{text}");
        assert_eq!(results[0].message, "Mutated field value to \"[dev, prod]\"");
    }

    #[test]
    fn matching_only_reports_and_bad_configs_are_errors() {
        let (text, results, _) = run_with(DEPLOYMENT, &[("by-value", "the-deployment")]);
        assert!(text.contains("name: the-deployment"));
        assert_eq!(results[0].message, "Matched field value \"the-deployment\"");
        let (_, results, _) = run_with(DEPLOYMENT, &[("by-value", "nothing")]);
        assert_eq!(results[0].message, "no matches");
        let (_, results, failure) = run_with(DEPLOYMENT, &[("by-name", "x")]);
        assert!(failure.is_some());
        assert_eq!(
            results[0].message,
            r#"failed to perform search-replace operation: "invalid matcher \"by-name\", must be one of [\"by-value\" \"by-file-path\" \"by-value-regex\" \"by-path\" \"put-value\" \"put-comment\"]""#
        );
        let (_, _, failure) = run_with(DEPLOYMENT, &[("by-value", "a"), ("by-value-regex", "b")]);
        assert!(failure.is_some());
    }

    #[test]
    fn paths_match_as_the_catalog_matches_them() {
        let m = |path: &str, pattern: &str| {
            back_track_match(
                &path.split('.').collect::<Vec<_>>(),
                &pattern.split('.').collect::<Vec<_>>(),
            )
        };
        assert!(m("a.a.b.c.e.b", "a.*.b.**.b"));
        assert!(m("spec.containers[0].image", "spec.containers[*].image"));
        assert!(m("spec.containers[0].image", "**.image"));
        assert!(!m("spec.containers[0].name", "**.image"));
        assert!(m("a[b]", "*[b]"));
        assert!(!m("a[b]", "a[c]"));
    }
}
