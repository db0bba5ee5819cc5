//! The editing API: reads and writes fields of mappings the way kyaml's
//! `RNode` and the kpt function SDK's `KubeObject` do, so that edits made
//! here come out byte-identical to Porch's.

use serde_json::Value;

use super::error::{Result, YamlError};
use super::json::{from_json, string_node};
use super::node::{Kind, Node};

impl Node {
    /// The value of `key` in a mapping (first match; keys compared as
    /// strings, like the SDK's `asString`).
    pub fn get(&self, key: &str) -> Option<&Node> {
        let i = self.key_index(key)?;
        self.content.get(i + 1)
    }

    /// Mutable [`Node::get`].
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        let i = self.key_index(key)?;
        self.content.get_mut(i + 1)
    }

    /// The value at a path of mapping keys, looking through a document node.
    pub fn get_path(&self, path: &[&str]) -> Option<&Node> {
        let mut cur = self.root();
        for key in path {
            cur = cur.get(key)?;
        }
        Some(cur)
    }

    /// Mutable [`Node::get_path`].
    pub fn get_path_mut(&mut self, path: &[&str]) -> Option<&mut Node> {
        let mut cur = self.root_mut();
        for key in path {
            cur = cur.get_mut(key)?;
        }
        Some(cur)
    }

    /// The string value at a path, if it is a scalar.
    pub fn get_str(&self, path: &[&str]) -> Option<&str> {
        let n = self.get_path(path)?;
        (n.kind == Kind::Scalar).then_some(n.value.as_str())
    }

    /// Index of the key node of `key` in a mapping's content.
    pub fn key_index(&self, key: &str) -> Option<usize> {
        if self.kind != Kind::Mapping {
            return None;
        }
        // The text first: most keys differ in it (and in length), which is
        // cheaper to see than the tag.
        (0..self.content.len()).step_by(2).find(|&i| {
            let k = &self.content[i];
            k.value == key && k.as_str().is_some()
        })
    }

    /// The keys of a mapping, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        let step = if self.kind == Kind::Mapping {
            2
        } else {
            usize::MAX
        };
        self.content.iter().step_by(step).filter_map(|k| {
            (self.kind == Kind::Mapping)
                .then_some(())
                .and_then(|()| k.as_str())
        })
    }

    /// Key/value pairs of a mapping, in order.
    pub fn pairs(&self) -> impl Iterator<Item = (&Node, &Node)> {
        let pairs = if self.kind == Kind::Mapping {
            self.content.chunks_exact(2)
        } else {
            [].chunks_exact(2)
        };
        pairs.map(|p| (&p[0], &p[1]))
    }

    fn expect_mapping(&self, what: &str) -> Result<()> {
        if self.kind == Kind::Mapping {
            Ok(())
        } else {
            Err(YamlError::edit(format!(
                "{what}: expected a mapping, found a {}",
                kind_name(self.kind)
            )))
        }
    }

    /// Sets `key` to `value` in a mapping, replacing the old value in place
    /// (keeping its comments) or appending the pair at the end (the SDK's
    /// `setYAMLNode`).
    pub fn set(&mut self, key: &str, mut value: Node) -> Result<()> {
        self.expect_mapping(key)?;
        if let Some(i) = self.key_index(key) {
            let old = &self.content[i + 1];
            value.copy_comments_from(old);
            self.content[i + 1] = value;
        } else {
            self.content.push(Node::new_string(key));
            self.content.push(value);
        }
        Ok(())
    }

    /// Sets `key` to `value`, carrying the old value's formatting over
    /// (`deepCopyFormatting` of the SDK): keys that existed keep their
    /// relative order, position and comments; new keys follow; list items
    /// equal by value to old ones keep their comments.
    pub fn set_keep_formatting(&mut self, key: &str, mut value: Node) -> Result<()> {
        self.expect_mapping(key)?;
        if let Some(i) = self.key_index(key) {
            deep_copy_formatting(&self.content[i + 1], &mut value);
            self.content[i + 1] = value;
        } else {
            self.content.push(Node::new_string(key));
            self.content.push(value);
        }
        Ok(())
    }

    /// Sets `key` from a JSON value built as the SDK builds typed values
    /// (`SubObject.SetNestedField` with a struct or map).
    pub fn set_json(&mut self, key: &str, value: &Value) -> Result<()> {
        self.set_keep_formatting(key, from_json(value))
    }

    /// Sets a string field (quoted when it would read back as another type).
    pub fn set_string(&mut self, key: &str, value: &str) -> Result<()> {
        self.set(key, string_node(value))
    }

    /// Sets the value at `path`, creating missing mappings along the way
    /// (appended at the end of their parent).
    pub fn set_path(&mut self, path: &[&str], value: Node) -> Result<()> {
        let Some((last, parents)) = path.split_last() else {
            return Err(YamlError::edit("empty field path"));
        };
        let mut cur = self.root_mut();
        for key in parents {
            cur = cur.upsert_map(key)?;
        }
        cur.set_keep_formatting(last, value)
    }

    /// The mapping at `key`, as the kpt SDK's `UpsertMap` does: an existing
    /// non-empty mapping is returned as is; an absent key, a non-mapping
    /// value or an empty mapping (`{}`) gives a new block mapping appended at
    /// the end of this mapping (the old pair is removed).
    pub fn upsert_map(&mut self, key: &str) -> Result<&mut Node> {
        self.expect_mapping(key)?;
        let keep = self.key_index(key).filter(|&i| {
            self.content[i + 1].kind == Kind::Mapping && !self.content[i + 1].content.is_empty()
        });
        let i = match keep {
            Some(i) => i,
            None => {
                self.remove(key);
                self.content.push(Node::new_string(key));
                self.content.push(Node::new_mapping());
                self.content.len() - 2
            }
        };
        Ok(&mut self.content[i + 1])
    }

    /// Removes `key` and its value from a mapping; returns the value.
    pub fn remove(&mut self, key: &str) -> Option<Node> {
        let i = self.key_index(key)?;
        let mut pair = self.content.drain(i..i + 2);
        let _key = pair.next();
        pair.next()
    }

    /// Sets `metadata.annotations[key] = value` on an object (creating
    /// `metadata` and `annotations` when missing).
    pub fn set_annotation(&mut self, key: &str, value: &str) -> Result<()> {
        let meta = self.root_mut().upsert_map("metadata")?;
        meta.upsert_map("annotations")?.set_string(key, value)
    }

    /// `metadata.annotations[key]`, if set.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.get_str(&["metadata", "annotations", key])
    }

    /// Sets `metadata.labels[key] = value` on an object.
    pub fn set_label(&mut self, key: &str, value: &str) -> Result<()> {
        let meta = self.root_mut().upsert_map("metadata")?;
        meta.upsert_map("labels")?.set_string(key, value)
    }

    /// `apiVersion` of an object.
    pub fn api_version(&self) -> &str {
        self.get_str(&["apiVersion"]).unwrap_or("")
    }

    /// `kind` of an object.
    pub fn object_kind(&self) -> &str {
        self.get_str(&["kind"]).unwrap_or("")
    }

    /// `metadata.name` of an object.
    pub fn name(&self) -> &str {
        self.get_str(&["metadata", "name"]).unwrap_or("")
    }

    /// `metadata.namespace` of an object.
    pub fn namespace(&self) -> &str {
        self.get_str(&["metadata", "namespace"]).unwrap_or("")
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Document => "document",
        Kind::Sequence => "sequence",
        Kind::Mapping => "mapping",
        Kind::Scalar => "scalar",
        Kind::Alias => "alias",
    }
}

fn copy_comments(src: &Node, dst: &mut Node) {
    dst.copy_comments_from(src);
}

/// Copies comments and field order from `src` to `dst`, recursively.
pub fn deep_copy_formatting(src: &Node, dst: &mut Node) {
    if src.kind != dst.kind {
        return;
    }
    match dst.kind {
        Kind::Mapping => copy_map_formatting(src, dst),
        Kind::Sequence => copy_list_formatting(src, dst),
        Kind::Document => {
            if src.content.len() == 1 && dst.content.len() == 1 {
                copy_comments(src, dst);
                deep_copy_formatting(&src.content[0], &mut dst.content[0]);
            } else {
                copy_list_formatting(src, dst);
            }
        }
        _ => copy_comments(src, dst),
    }
}

fn copy_map_formatting(src: &Node, dst: &mut Node) {
    copy_comments(src, dst);
    let mut next = 0;
    for pair in src.content.chunks_exact(2) {
        let Some(key) = pair[0].as_str() else {
            continue;
        };
        let found = (next..dst.content.len())
            .step_by(2)
            .find(|&j| dst.content[j].as_str() == Some(key));
        let Some(j) = found else { continue };
        if j != next {
            dst.content.swap(j, next);
            dst.content.swap(j + 1, next + 1);
        }
        copy_comments(&pair[0], &mut dst.content[next]);
        deep_copy_formatting(&pair[1], &mut dst.content[next + 1]);
        next += 2;
    }
}

fn copy_list_formatting(src: &Node, dst: &mut Node) {
    copy_comments(src, dst);
    for item in &src.content {
        if let Some(j) = dst.content.iter().position(|d| same_by_value(item, d)) {
            deep_copy_formatting(item, &mut dst.content[j]);
        }
    }
}

/// The SDK's `shouldCopyFormatting`: every field of `src` is in `dst` with
/// an equal value (lists inside are not compared).
fn same_by_value(src: &Node, dst: &Node) -> bool {
    if src.kind != dst.kind {
        return false;
    }
    match src.kind {
        Kind::Scalar => src.value == dst.value,
        Kind::Mapping => src.content.chunks_exact(2).all(|pair| {
            let Some(key) = pair[0].as_str() else {
                return false;
            };
            dst.get(key).is_some_and(|d| same_by_value(&pair[1], d))
        }),
        Kind::Sequence | Kind::Alias | Kind::Document => true,
    }
}

#[cfg(test)]
mod tests {
    use crate::yaml::{parse_document, to_string};

    #[test]
    fn upsert_map_replaces_empty_and_scalar_values_at_the_end() {
        for input in [
            "pipeline: {}\nstatus: x\n",
            "pipeline: 5\nstatus: x\n",
            "pipeline:\nstatus: x\n",
        ] {
            let mut d = parse_document(input).expect("parses");
            d.root_mut()
                .upsert_map("pipeline")
                .expect("map")
                .set_string("a", "b")
                .expect("set");
            assert_eq!(
                to_string(&d).expect("emits"),
                "status: x\npipeline:\n  a: b\n",
                "{input:?}"
            );
        }
    }

    #[test]
    fn upsert_map_keeps_an_existing_mapping_in_place() {
        let mut d = parse_document("pipeline: # fns\n  x: 1\nstatus: x\n").expect("parses");
        d.root_mut()
            .upsert_map("pipeline")
            .expect("map")
            .set_string("a", "b")
            .expect("set");
        assert_eq!(
            to_string(&d).expect("emits"),
            "pipeline: # fns\n  x: 1\n  a: b\nstatus: x\n"
        );
    }
}
