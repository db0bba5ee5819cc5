//! Shared input decoding of the fuzz targets: text inputs are YAML, so the
//! seed corpora are readable and minimised crashes can be read as files.

use std::collections::BTreeMap;

use pv_core::yaml;
use serde_json::Value;

/// The documents of a YAML stream as JSON, skipping those that do not
/// convert (aliases over the cap, non-string keys, ...). `None` when the
/// stream does not parse.
pub fn documents(text: &str) -> Option<Vec<Value>> {
    let docs = yaml::parse_stream(text).ok()?;
    Some(docs.iter().filter_map(|d| yaml::to_json(d).ok()).collect())
}

/// Splits a text into packages on lines `%%%`, and each package into files
/// on lines `### <path>`; text before the first `###` is `resources.yaml`.
pub fn packages(text: &str) -> Vec<BTreeMap<String, String>> {
    text.split("\n%%%\n")
        .map(|package| {
            let mut files = BTreeMap::new();
            let mut path = String::from("resources.yaml");
            let mut content = String::new();
            for line in package.split_inclusive('\n') {
                if let Some(p) = line.strip_prefix("### ") {
                    files.insert(std::mem::take(&mut path), std::mem::take(&mut content));
                    path = p.trim_end().to_string();
                } else {
                    content.push_str(line);
                }
            }
            files.insert(path, content);
            files.retain(|_, c| !c.is_empty());
            files
        })
        .collect()
}
