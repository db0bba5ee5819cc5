//! The wall clock as the controllers stamp it: RFC 3339, to the second,
//! the form Kubernetes writes in conditions and timestamps.

/// RFC 3339 now, to the second.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
