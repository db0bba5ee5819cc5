//! Which supplied objects belong to a set's namespace.

/// Whether an object of namespace `object_ns` is visible to a set in
/// `set_ns`: upstream lists every input in the set's namespace, so objects
/// of other namespaces are ignored. An empty namespace on either side (a
/// cluster-scoped object, or a caller that pre-filtered) matches.
pub fn in_namespace(object_ns: &str, set_ns: &str) -> bool {
    object_ns.is_empty() || set_ns.is_empty() || object_ns == set_ns
}
