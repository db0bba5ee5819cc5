//! The catalog's `apply-setters` function (`functions/go/apply-setters`,
//! v0.2, the version Porch ships): fields tagged with a setter comment
//! (`# kpt-set: ${name}`, or a pattern such as `nginx:${tag}`) get the
//! values of the setters the `functionConfig` ConfigMap's `data` gives.
//!
//! * A scalar whose line comment is a setter pattern naming at least one
//!   given setter takes the pattern with the given setters filled in, and
//!   the others filled in from the field's current value where the
//!   pattern matches it; a setter left unresolved is an error.
//! * A sequence whose key (or, in flow style, the sequence itself) carries
//!   a pattern of exactly one setter takes the setter's value read as a
//!   YAML sequence (an empty value gives `[]`, its comment on the value).
//! * Each field set is a result (`set field value to "…"`, with its file
//!   and dotted path); none at all gives `no matches for input setter(s)`.

use crate::render::annotations as ann;
use crate::render::result::FnResult;
use crate::yaml::{self, Kind, Node, Style};

use super::set_annotations::{data_map, file_annotation};
use super::set_namespace::go_quote;
use super::{field_result, framework_error, FnInput, FnOutput};

/// The prefix of a setter comment.
const SETTER_COMMENT: &str = "# kpt-set: ";

/// One setter: a name and the value given for it.
struct Setter {
    name: String,
    value: String,
}

/// A field set: where, and to what.
struct Applied {
    file: String,
    field: String,
    value: String,
}

/// Runs `apply-setters` on the items.
pub fn run(input: FnInput) -> FnOutput {
    let mut items = input.items;
    // `Decode`: every `data` entry of the config is a setter (Go ranges
    // over the map in no set order; names sorted here).
    let setters: Vec<Setter> = input
        .function_config
        .as_ref()
        .map(|c| data_map(c.root()))
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| Setter { name, value })
        .collect();
    let mut applied = Vec::new();
    for item in &mut items {
        let file = file_annotation(item, ann::PATH, ann::LEGACY_PATH);
        let mut visit = Visit {
            setters: &setters,
            file: &file,
            applied: &mut applied,
        };
        if let Err(e) = super::accept(&mut visit, item.root_mut(), "") {
            return framework_error(items, "failed to apply setters", e);
        }
    }
    let results = if applied.is_empty() {
        vec![FnResult {
            message: "no matches for input setter(s)".into(),
            ..FnResult::default()
        }]
    } else {
        applied
            .into_iter()
            .map(|a| {
                field_result(
                    format!("set field value to {}", go_quote(&a.value)),
                    a.file,
                    a.field,
                )
            })
            .collect()
    };
    FnOutput {
        items,
        results,
        ..FnOutput::default()
    }
}

/// The walk over one item (`accept`).
struct Visit<'a> {
    setters: &'a [Setter],
    file: &'a str,
    applied: &'a mut Vec<Applied>,
}

impl super::Visitor for Visit<'_> {
    /// `visitMapping`: the tagged sequences of a mapping.
    fn mapping(&mut self, object: &mut Node, path: &str) -> Result<(), String> {
        for pair in object.content.chunks_mut(2) {
            let [key, value] = pair else { continue };
            if value.kind != Kind::Sequence {
                continue;
            }
            let flow = value.style.contains(Style::FLOW);
            let comment = if flow {
                value.line_comment().to_string()
            } else {
                key.line_comment().to_string()
            };
            let Some(pattern) = setter_pattern(&comment) else {
                continue;
            };
            if !should_set(pattern, self.setters) {
                continue;
            }
            let names = setter_names(pattern);
            if !(names.len() == 1 && pattern.starts_with("${") && pattern.ends_with('}')) {
                return Err(format!(
                    "invalid setter pattern for array node: {}",
                    go_quote(pattern)
                ));
            }
            let wanted = clean(pattern);
            let sv = self
                .setters
                .iter()
                .find(|s| s.name == wanted)
                .map(|s| s.value.clone())
                .unwrap_or_default();
            let field = format!("{path}.{}", key.value);
            let field = field.trim_start_matches('.').to_string();
            if sv.is_empty() {
                // An empty sequence is written `[]`, the comment after it.
                value.content.clear();
                value.style = Style::FLOW;
                value.set_line_comment(comment.clone());
                key.set_line_comment("");
            } else {
                let parsed = yaml::parse_document(&sv).ok();
                let items = match parsed.as_ref().map(Node::root) {
                    Some(seq) if seq.kind == Kind::Sequence => seq.content.clone(),
                    _ => {
                        return Err(format!(
                            "input to array setter must be an array of values, but found {}",
                            go_quote(&sv)
                        ))
                    }
                };
                value.content = items;
                // Non-empty sequences are written in block style, the
                // comment on the key.
                value.style = Style::plain();
                value.set_line_comment("");
                key.set_line_comment(comment.clone());
            }
            self.applied.push(Applied {
                file: self.file.to_string(),
                field,
                value: sv,
            });
        }
        Ok(())
    }

    /// `visitScalar`: a tagged scalar takes its pattern, filled in.
    fn scalar(&mut self, object: &mut Node, path: &str) -> Result<(), String> {
        let comment = object.line_comment().to_string();
        let Some(pattern) = setter_pattern(&comment) else {
            return Ok(());
        };
        if !should_set(pattern, self.setters) {
            return Ok(());
        }
        let mut value = pattern.to_string();
        for s in self.setters {
            value = value.replace(&format!("${{{}}}", s.name), &s.value);
        }
        for (name, current) in current_setter_values(pattern, &object.value) {
            value = value.replace(&format!("${{{name}}}"), &current);
        }
        let unresolved = setter_names(&value);
        if !unresolved.is_empty() {
            return Err(format!(
                "values for setters [{}] must be provided",
                unresolved.join(" ")
            ));
        }
        if value.is_empty() {
            object.style = Style::DOUBLE_QUOTED;
        }
        object.value = value.clone();
        // `Tag = ""`: the value is written with the type it reads as.
        object.tag = "".into();
        self.applied.push(Applied {
            file: self.file.to_string(),
            field: path.trim_start_matches('.').to_string(),
            value,
        });
        Ok(())
    }
}

/// The pattern of a setter comment (`# kpt-set: …`), trimmed.
pub(super) fn setter_pattern(comment: &str) -> Option<&str> {
    comment.strip_prefix(SETTER_COMMENT).map(str::trim)
}

/// Whether the pattern names at least one given setter.
fn should_set(pattern: &str, setters: &[Setter]) -> bool {
    setters
        .iter()
        .any(|s| pattern.contains(&format!("${{{}}}", s.name)))
}

/// The `${…}` references of a pattern, in order.
pub(super) fn setter_names(pattern: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = pattern;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                out.push(format!("${{{}}}", &after[..end]));
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

/// The name inside `${…}`.
pub(super) fn clean(reference: &str) -> &str {
    let t = reference.trim();
    let t = t.strip_prefix("${").unwrap_or(t);
    t.strip_suffix('}').unwrap_or(t)
}

/// `currentSetterValues`: the setters' values read back from the field's
/// current value through the pattern (each reference a greedy `(.*)`);
/// nothing when the pattern does not match, or any value is empty.
pub(super) fn current_setter_values(pattern: &str, value: &str) -> Vec<(String, String)> {
    let names = setter_names(pattern);
    let mut re = regex::escape(pattern);
    for name in &names {
        re = re.replace(&regex::escape(name), "(.*)");
    }
    let Ok(re) = regex::Regex::new(&re) else {
        return Vec::new();
    };
    let Some(caps) = re.captures(value) else {
        return Vec::new();
    };
    let values: Vec<&str> = caps
        .iter()
        .skip(1)
        .map(|m| m.map_or("", |m| m.as_str()))
        .collect();
    if values.len() != names.len() || values.iter().any(|v| v.is_empty()) {
        return Vec::new();
    }
    names
        .iter()
        .zip(values)
        .map(|(n, v)| (clean(n).to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(resources: &str, data: &[(&str, &str)]) -> (String, Vec<FnResult>, Option<String>) {
        let items = yaml::parse_stream(resources).expect("resources");
        let mut config = Node::new_mapping();
        let mut d = Node::new_mapping();
        for (k, v) in data {
            d.set(k, Node::new_string(*v)).expect("set");
        }
        config
            .set("apiVersion", Node::new_string("v1"))
            .expect("set");
        config
            .set("kind", Node::new_string("ConfigMap"))
            .expect("set");
        config.set("data", d).expect("set");
        let out = run(FnInput {
            items,
            function_config: Some(Node::new_document(config)),
        });
        let text = yaml::emit_stream(&out.items, yaml::Format::Kyaml).expect("emit");
        (text, out.results, out.failure)
    }

    #[test]
    fn scalars_take_their_pattern_filled_in() {
        let (text, results, failure) = render(
            "a:\n  image: nginx:1.1 # kpt-set: ${image}:${tag}\n  replicas: 4 # kpt-set: ${replicas}\n  name: x # kpt-set: ${other}\n",
            &[("tag", "1.2"), ("replicas", "3")],
        );
        assert_eq!(failure, None);
        assert_eq!(
            text,
            "a:\n  image: nginx:1.2 # kpt-set: ${image}:${tag}\n  replicas: 3 # kpt-set: ${replicas}\n  name: x # kpt-set: ${other}\n"
        );
        let messages: Vec<&str> = results.iter().map(|r| r.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "set field value to \"nginx:1.2\"",
                "set field value to \"3\""
            ]
        );
        assert_eq!(results[0].field.as_ref().unwrap().path, "a.image");
    }

    #[test]
    fn sequences_take_the_setters_list_and_empty_gives_flow() {
        let (text, _, failure) = render(
            "env: # kpt-set: ${env}\n- dev\n- stage\nother: [a] # kpt-set: ${empty}\n",
            &[("env", "- prod\n- dev"), ("empty", "")],
        );
        assert_eq!(failure, None);
        assert_eq!(
            text,
            "env: # kpt-set: ${env}\n- prod\n- dev\nother: [] # kpt-set: ${empty}\n"
        );
    }

    #[test]
    fn unresolved_setters_and_bad_arrays_are_errors() {
        let (_, results, failure) =
            render("image: x # kpt-set: ${image}:${tag}\n", &[("tag", "1")]);
        assert_eq!(
            failure.as_deref(),
            Some("values for setters [${image}] must be provided")
        );
        assert_eq!(
            results[0].message,
            "failed to apply setters: values for setters [${image}] must be provided"
        );
        let (_, _, failure) = render("env: # kpt-set: ${env}\n- a\n", &[("env", "not: a list")]);
        assert_eq!(
            failure.as_deref(),
            Some("input to array setter must be an array of values, but found \"not: a list\"")
        );
        let (_, _, failure) = render("env: # kpt-set: a-${env}\n- a\n", &[("env", "- b")]);
        assert_eq!(
            failure.as_deref(),
            Some("invalid setter pattern for array node: \"a-${env}\"")
        );
    }

    #[test]
    fn values_not_given_are_read_back_from_the_field() {
        assert_eq!(
            current_setter_values("my-app.${stage}.${domain}", "my-app.dev.example"),
            [
                ("stage".to_string(), "dev".to_string()),
                ("domain".to_string(), "example".to_string())
            ]
        );
        assert!(current_setter_values("a-${x}", "b-1").is_empty());
        let (_, results, _) = render("a: x # kpt-set: ${nope}\n", &[("tag", "1")]);
        assert_eq!(results[0].message, "no matches for input setter(s)");
    }
}
