//! Function image names as kpt resolves them: short names get the catalog
//! prefix, a missing tag becomes `:latest`, a `tag:` field replaces the
//! image's tag; and which resolved images run a builtin.

/// kpt's default image prefix (the KRM functions catalog).
pub const DEFAULT_PREFIX: &str = "ghcr.io/kptdev/krm-functions-catalog";

/// Older catalog registries whose images also name the builtins.
const CATALOG_PREFIXES: [&str; 3] = [DEFAULT_PREFIX, "gcr.io/kpt-fn", "ghcr.io/nephio-project"];

/// Resolves `image` (with the Kptfile's `tag:` when set) as kpt does:
/// an image without `/` gets `prefix/`; a `tag` replaces the image's tag
/// and digest; without either, `:latest` is added.
pub fn resolve(image: &str, tag: &str, prefix: &str) -> String {
    let prefix = prefix.trim_end_matches('/');
    let full = if !image.contains('/') && !prefix.is_empty() {
        format!("{prefix}/{image}")
    } else {
        image.to_string()
    };
    if !tag.is_empty() {
        let (name, _, _) = split(&full);
        return format!("{name}:{tag}");
    }
    let (_, t, digest) = split(&full);
    if t.is_none() && digest.is_none() {
        format!("{full}:latest")
    } else {
        full
    }
}

/// Splits an image into name, tag and digest.
pub fn split(image: &str) -> (&str, Option<&str>, Option<&str>) {
    let (rest, digest) = match image.find('@') {
        Some(i) => (&image[..i], Some(&image[i + 1..])),
        None => (image, None),
    };
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    match rest[last_slash..].find(':') {
        Some(i) => (
            &rest[..last_slash + i],
            Some(&rest[last_slash + i + 1..]),
            digest,
        ),
        None => (rest, None, digest),
    }
}

/// The catalog function a resolved image names (`set-namespace` for
/// `ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.5`), whatever
/// its tag, when it comes from a catalog registry or `extra_prefix`.
pub fn catalog_name<'a>(resolved: &'a str, extra_prefix: &str) -> Option<&'a str> {
    let (name, _, _) = split(resolved);
    let extra = extra_prefix.trim_end_matches('/');
    CATALOG_PREFIXES
        .iter()
        .copied()
        .chain((!extra.is_empty()).then_some(extra))
        .find_map(|p| name.strip_prefix(p)?.strip_prefix('/'))
        .filter(|n| !n.contains('/'))
}

/// Whether `image` is a valid reference under the Docker grammar kpt
/// checks (`[domain/]path[:tag][@digest]`, lowercase path components).
pub fn is_valid(image: &str) -> bool {
    let (name, tag, digest) = split(image);
    if name.is_empty() {
        return false;
    }
    if let Some(tag) = tag {
        let ok = !tag.is_empty()
            && tag.len() <= 128
            && tag
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
            && tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-');
        if !ok {
            return false;
        }
    }
    if let Some(d) = digest {
        let Some((alg, hex)) = d.split_once(':') else {
            return false;
        };
        if alg.is_empty() || hex.len() < 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return false;
        }
    }
    let mut parts = name.split('/').peekable();
    let mut first = true;
    while let Some(part) = parts.next() {
        let is_domain = first
            && parts.peek().is_some()
            && (part.contains('.') || part.contains(':') || part == "localhost");
        first = false;
        if is_domain {
            if !part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':'))
            {
                return false;
            }
            continue;
        }
        if !valid_path_component(part) {
            return false;
        }
    }
    true
}

/// `[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*`
fn valid_path_component(part: &str) -> bool {
    let b = part.as_bytes();
    if b.is_empty() || !is_lower_alnum(b[0]) || !is_lower_alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if is_lower_alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !is_lower_alnum(b[i]) {
            i += 1;
        }
        let sep = &part[start..i];
        let ok = sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|c| c == b'-');
        if !ok {
            return false;
        }
    }
    true
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_get_the_prefix_and_latest() {
        assert_eq!(
            resolve("set-namespace", "", DEFAULT_PREFIX),
            "ghcr.io/kptdev/krm-functions-catalog/set-namespace:latest"
        );
        assert_eq!(
            resolve("set-namespace:v0.4.5", "", DEFAULT_PREFIX),
            "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.5"
        );
        assert_eq!(
            resolve("gcr.io/kpt-fn/x", "", DEFAULT_PREFIX),
            "gcr.io/kpt-fn/x:latest"
        );
        assert_eq!(
            resolve("set-labels:v1", "v0.2.2", DEFAULT_PREFIX),
            "ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2.2"
        );
        assert_eq!(
            resolve("localhost:5000/fn", "", ""),
            "localhost:5000/fn:latest"
        );
    }

    #[test]
    fn any_tag_of_a_catalog_image_names_the_function() {
        assert_eq!(
            catalog_name(
                "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1",
                ""
            ),
            Some("set-namespace")
        );
        assert_eq!(
            catalog_name("gcr.io/kpt-fn/set-labels:unstable", ""),
            Some("set-labels")
        );
        assert_eq!(catalog_name("example.com/set-labels:v1", ""), None);
        assert_eq!(
            catalog_name("example.com/fns/set-labels:v1", "example.com/fns/"),
            Some("set-labels")
        );
    }

    #[test]
    fn invalid_images_are_refused() {
        assert!(is_valid(
            "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.5"
        ));
        assert!(is_valid("set-namespace"));
        assert!(!is_valid("Set-Namespace"));
        assert!(!is_valid("a b"));
        assert!(!is_valid("x:"));
        assert!(!is_valid("-x"));
    }
}
