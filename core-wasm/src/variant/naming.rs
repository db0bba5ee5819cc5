//! Names the PackageVariant controller makes: workspace names of the drafts
//! it creates (`packagevariant-N`) and names of the KRM functions it prepends
//! to a package's pipeline (`PackageVariant.<pv>.<fn>.<i>`).

use crate::api::package_revision::PackageRevision;
use crate::yaml::Node;

/// Prefix of the workspace names of drafts created by a PackageVariant.
pub const WORKSPACE_NAME_PREFIX: &str = "packagevariant-";

/// First dot-separated part of the name of every function a PackageVariant
/// adds to a pipeline.
pub const FUNC_NAME_PREFIX: &str = "PackageVariant";

/// `newWorkspaceName`: `packagevariant-(N+1)` where N is the highest number
/// among the workspace names `packagevariant-N` of the revisions of the same
/// `repo` and `package` (whoever owns them). A suffix that is not a number
/// counts as 0, as upstream's ignored `strconv.Atoi` error does; so does one
/// too large for an `i64` (upstream would take `MaxInt` and overflow).
pub fn new_workspace_name(prs: &[PackageRevision], package: &str, repo: &str) -> String {
    let max = prs
        .iter()
        .filter(|pr| pr.spec.package_name == package && pr.spec.repository == repo)
        .filter_map(|pr| pr.spec.workspace_name.strip_prefix(WORKSPACE_NAME_PREFIX))
        .map(|suffix| suffix.parse::<i64>().unwrap_or(0))
        .fold(0i64, i64::max);
    format!("{WORKSPACE_NAME_PREFIX}{}", max.saturating_add(1))
}

/// `generatePVFuncName`: `PackageVariant.<pvName>.<funcName>.<pos>`.
pub fn generate_pv_func_name(func_name: &str, pv_name: &str, pos: usize) -> String {
    format!("{FUNC_NAME_PREFIX}.{pv_name}.{func_name}.{pos}")
}

/// Whether a function `name` is one that the PackageVariant `pv_name` added,
/// i.e. whether it equals [`generate_pv_func_name`]`(f, pv_name, i)` for some
/// function name `f` (possibly empty or containing dots) and index `i`.
///
/// Upstream splits the name on `.` and requires exactly four parts, so a
/// PackageVariant whose name contains a dot (legal for a Kubernetes name), or
/// a function name containing a dot, yields names it never recognises: they
/// are prepended again on every reconcile, the Kptfile always "changes", and
/// a published downstream gets a new edit draft each time. Here the exact
/// prefix `PackageVariant.<pv_name>.` is stripped and the rest must end with
/// `.<digits>`, which recognises every name this controller generates.
///
/// A name of the form `PackageVariant.a.b.x.0` is claimed both by a variant
/// named `a` (function `b.x`) and by one named `a.b` (function `x`); two
/// variants can only see each other's functions when they target the same
/// downstream package, which is already a conflict.
pub fn is_package_variant_func_name(name: &str, pv_name: &str) -> bool {
    let Some(rest) = name
        .strip_prefix(FUNC_NAME_PREFIX)
        .and_then(|r| r.strip_prefix('.'))
        .and_then(|r| r.strip_prefix(pv_name))
        .and_then(|r| r.strip_prefix('.'))
    else {
        return false;
    };
    match rest.rfind('.') {
        Some(dot) => is_go_int(&rest[dot + 1..]),
        None => false,
    }
}

/// `isPackageVariantFunc` on a function entry of a Kptfile pipeline: its
/// `name` field must be a string recognised by
/// [`is_package_variant_func_name`]. An entry without a `name` is never ours.
pub fn is_package_variant_func(function: &Node, pv_name: &str) -> bool {
    function
        .root()
        .get("name")
        .and_then(Node::as_str)
        .is_some_and(|name| is_package_variant_func_name(name, pv_name))
}

/// Whether Go's `strconv.Atoi` accepts `s` (optional sign, then decimal
/// digits, within `i64`).
fn is_go_int(s: &str) -> bool {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && s.parse::<i64>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(repo: &str, package: &str, ws: &str) -> PackageRevision {
        let mut pr = PackageRevision::default();
        pr.spec.repository = repo.into();
        pr.spec.package_name = package.into();
        pr.spec.workspace_name = ws.into();
        pr
    }

    #[test]
    fn workspace_names_count_per_package() {
        assert_eq!(new_workspace_name(&[], "p", "r"), "packagevariant-1");
        let prs = vec![
            pr("r", "p", "packagevariant-1"),
            pr("r", "p", "packagevariant-7"),
            pr("r", "p", "packagevariant-x"),
            pr("r", "p", "v3"),
            pr("r", "other", "packagevariant-20"),
            pr("other", "p", "packagevariant-30"),
        ];
        assert_eq!(new_workspace_name(&prs, "p", "r"), "packagevariant-8");
        assert_eq!(new_workspace_name(&prs, "other", "r"), "packagevariant-21");
        let huge = vec![pr("r", "p", "packagevariant-99999999999999999999999")];
        assert_eq!(new_workspace_name(&huge, "p", "r"), "packagevariant-1");
        let max = vec![pr("r", "p", &format!("packagevariant-{}", i64::MAX))];
        assert_eq!(
            new_workspace_name(&max, "p", "r"),
            format!("packagevariant-{}", i64::MAX)
        );
    }

    #[test]
    fn function_names() {
        assert_eq!(
            generate_pv_func_name("my-func", "my-pv", 3),
            "PackageVariant.my-pv.my-func.3"
        );
        assert_eq!(
            generate_pv_func_name("", "my-pv", 0),
            "PackageVariant.my-pv..0"
        );
    }

    #[test]
    fn recognition_matches_upstream_on_plain_names() {
        let yes = |n: &str, pv: &str| is_package_variant_func_name(n, pv);
        assert!(yes("PackageVariant.my-pv.my-func.0", "my-pv"));
        assert!(yes("PackageVariant.my-pv..0", "my-pv"));
        assert!(yes("PackageVariant.my-pv.f.+3", "my-pv"));
        assert!(!yes("PackageVariant.my-pv.my-func.0", "other"));
        assert!(!yes("PackageVariant.not-enough.dots", "not-enough"));
        assert!(!yes("noprefix.my-pv.my-func.0", "my-pv"));
        assert!(!yes("PackageVariant.my-pv.my-func.str", "my-pv"));
        assert!(!yes("PackageVariant.my-pv.my-func.", "my-pv"));
        assert!(!yes("PackageVariant.my-pv.my-func.-", "my-pv"));
        assert!(!yes("PackageVariant.my-pv", "my-pv"));
        assert!(!yes("PackageVariant.my-pvx.f.0", "my-pv"));
        assert!(!yes("PackageVariantX.my-pv.f.0", "my-pv"));
        assert!(!yes("PackageVariant.my-pv.f.99999999999999999999", "my-pv"));
    }

    /// Regression: upstream's 4-part split never recognises these, so the
    /// functions were duplicated on every reconcile.
    #[test]
    fn recognition_of_dotted_pv_and_function_names() {
        for (pv, f) in [
            ("my.pv", "set-labels"),
            ("my-pv", "set.labels"),
            ("a.b.c", "x.y.z"),
            ("my.pv", ""),
        ] {
            for i in [0usize, 1, 12] {
                let name = generate_pv_func_name(f, pv, i);
                assert!(is_package_variant_func_name(&name, pv), "{name} for {pv}");
            }
        }
        assert!(!is_package_variant_func_name(
            "PackageVariant.my.pv.f.0",
            "my.pvx"
        ));
    }

    /// Regression: prepending the variant's functions twice (two reconciles)
    /// must give the same pipeline, whatever dots the names contain.
    #[test]
    fn second_pass_does_not_duplicate_dotted_functions() {
        fn pass(pipeline: &[String], pv: &str, fns: &[&str]) -> Vec<String> {
            let kept = pipeline
                .iter()
                .filter(|n| !is_package_variant_func_name(n, pv))
                .cloned();
            fns.iter()
                .enumerate()
                .map(|(i, f)| generate_pv_func_name(f, pv, i))
                .chain(kept)
                .collect()
        }
        for pv in ["my-pv", "my.pv", "example.com"] {
            let fns = ["set-labels", "set.namespace", "a.b.c"];
            let user = vec!["user-fn".to_string(), "user.fn.with.dots.0".to_string()];
            let once = pass(&user, pv, &fns);
            let twice = pass(&once, pv, &fns);
            assert_eq!(once, twice, "pv {pv}");
            assert_eq!(once.len(), 5);
            // Removing the variant's functions leaves the user's ones.
            assert_eq!(pass(&twice, pv, &[]), user);
        }
    }

    /// Upstream's rule: exactly four dot-separated parts, the prefix, the
    /// variant's name, an `Atoi`-able index.
    fn upstream_rule(name: &str, pv: &str) -> bool {
        let parts: Vec<&str> = name.split('.').collect();
        parts.len() == 4 && parts[0] == FUNC_NAME_PREFIX && parts[1] == pv && is_go_int(parts[3])
    }

    proptest::proptest! {
        #[test]
        fn generated_names_are_always_recognised(
            pv in "[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?",
            f in "\\PC{0,20}",
            i in 0usize..10_000,
        ) {
            proptest::prop_assert!(is_package_variant_func_name(&generate_pv_func_name(&f, &pv, i), &pv));
        }

        #[test]
        fn recognises_everything_upstream_recognises(
            name in "(PackageVariant\\.)?[a-z.+0-9-]{0,24}",
            pv in "[a-z.-]{0,6}",
        ) {
            if upstream_rule(&name, &pv) {
                proptest::prop_assert!(is_package_variant_func_name(&name, &pv));
            }
        }

        #[test]
        fn never_panics(name in "\\PC{0,40}", pv in "\\PC{0,10}") {
            let _ = is_package_variant_func_name(&name, &pv);
        }
    }

    #[test]
    fn recognition_on_nodes() {
        let doc = crate::yaml::parse_document("name: PackageVariant.my-pv.f.0\n").unwrap();
        assert!(is_package_variant_func(&doc, "my-pv"));
        let doc = crate::yaml::parse_document("otherkey: PackageVariant.my-pv.f.0\n").unwrap();
        assert!(!is_package_variant_func(&doc, "my-pv"));
        let doc = crate::yaml::parse_document("- a\n").unwrap();
        assert!(!is_package_variant_func(&doc, "my-pv"));
    }
}
