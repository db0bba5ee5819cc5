//! Change detection (the end of upstream's `calculateDraftResources`):
//! files added, removed or whose text differs are changes, except that the
//! Kptfile is compared semantically (`kptfilesEqual`): both texts are read
//! into kpt's typed Kptfile and compared, so formatting, comments and
//! fields unknown to kpt's Go types do not count. A Kptfile that cannot be
//! read that way is "not equal".

use std::collections::BTreeMap;

use crate::yaml;

use super::kptfile_view::KptfileView;
use super::KPTFILE;
use crate::krm::objects::parse_object;

fn view(text: &str) -> Option<KptfileView> {
    let object = parse_object(text).ok()?;
    let json = yaml::to_json(&object).ok()?;
    KptfileView::from_json(&json).ok()
}

/// Whether two Kptfile texts are the same Kptfile to kpt.
pub fn kptfiles_equal(a: &str, b: &str) -> bool {
    match (view(a), view(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The files whose content changed between `before` and `after` (added,
/// removed or different), in name order. Empty means "unchanged".
pub fn changed_files(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut changed = Vec::new();
    for (name, old) in before {
        match after.get(name) {
            None => changed.push(name.clone()),
            Some(new) if new == old => {}
            Some(new) if name == KPTFILE && kptfiles_equal(old, new) => {}
            Some(_) => changed.push(name.clone()),
        }
    }
    changed.extend(
        after
            .keys()
            .filter(|name| !before.contains_key(*name))
            .cloned(),
    );
    changed.sort();
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n    - image: x # comment\n";
    const B: &str = "# other layout\napiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: p, uid: ignored}\npipeline:\n  mutators:\n  - image: x\nunknown: field\n";

    #[test]
    fn kptfiles_compare_semantically() {
        assert!(kptfiles_equal(A, B));
        assert!(!kptfiles_equal(A, &A.replace("image: x", "image: y")));
        assert!(!kptfiles_equal(A, "a: [")); // a parse error is "not equal"
        assert!(!kptfiles_equal("info: 5\n", "info: 5\n"));
    }

    #[test]
    fn only_the_kptfile_is_compared_semantically() {
        let before = BTreeMap::from([
            ("Kptfile".to_string(), A.to_string()),
            ("a.yaml".to_string(), "a: 1\n".to_string()),
            ("gone.yaml".to_string(), "x: 1\n".to_string()),
        ]);
        let mut after = before.clone();
        after.insert("Kptfile".into(), B.into());
        after.insert("a.yaml".into(), "a:  1\n".into());
        after.remove("gone.yaml");
        after.insert("new.yaml".into(), String::new());
        assert_eq!(
            changed_files(&before, &after),
            ["a.yaml", "gone.yaml", "new.yaml"]
        );
        assert!(changed_files(&before, &before).is_empty());
    }
}
