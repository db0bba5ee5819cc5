//! The cache the standalone Repository controller creates
//! (`REPO/cache.go`): which type, the database settings from the
//! environment, the Git cache directory, the options, the commit identity
//! and the retry schedule of its creation. The environment and the user's
//! directories are arguments: the host reads them.

use super::config::RepositoryControllerConfig;
use super::time::Duration;

/// Name of the commits the controller makes.
pub const COMMIT_AUTHOR_NAME: &str = "porch-controller";
/// E-mail of the commits the controller makes.
pub const COMMIT_AUTHOR_EMAIL: &str = "porch-controller@kpt.dev";
/// Folder under the user's cache directory when no directory is configured.
pub const CACHE_SUBDIRECTORY: &str = "porch-repo-controller";

/// A bad cache setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheConfigError {
    /// Not DB or CR.
    #[error("invalid cache type: {0} (must be DB or CR)")]
    InvalidCacheType(String),
    /// Required database variables are unset (Go prints the list as
    /// `[A B]`).
    #[error("missing required environment variables: [{}]", .0.join(" "))]
    MissingEnv(Vec<String>),
    /// `DB_DRIVER` other than `pgx` or `mysql`.
    #[error("unsupported DB driver: {0}")]
    UnsupportedDriver(String),
}

/// The cache implementations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheType {
    /// `DB`: a SQL database.
    Db,
    /// `CR`: custom resources.
    Cr,
}

impl CacheType {
    /// `DB` or `CR`.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheType::Db => "DB",
            CacheType::Cr => "CR",
        }
    }
}

/// `validateCacheType`: `DB` or `CR`, in any case.
pub fn validate_cache_type(value: &str) -> Result<CacheType, CacheConfigError> {
    match value.to_uppercase().as_str() {
        "DB" => Ok(CacheType::Db),
        "CR" => Ok(CacheType::Cr),
        _ => Err(CacheConfigError::InvalidCacheType(value.to_string())),
    }
}

/// `DBCacheOptions`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DbCacheOptions {
    /// `pgx` or `mysql`.
    pub driver: String,
    /// The connection string.
    pub data_source: String,
}

/// `setupDBCacheOptionsFromEnv`, with `env` the process environment:
/// `DB_DRIVER` (default `pgx`), `DB_HOST`, `DB_PORT`, `DB_NAME`, `DB_USER`
/// required, `DB_PASSWORD` required unless `DB_SSL_MODE` is set to
/// something other than `disable`; every missing variable is reported.
///
/// pgx: `postgres://user:password@host:port/name?sslmode=disable`, or with
/// an SSL mode `postgres://user[:password]@host:port/name?sslmode=<mode>`;
/// mysql: `user:password@tcp(host:port)/name`.
///
/// Fixed upstream bugs: upstream drops `DB_PASSWORD` from the pgx
/// connection string whenever an SSL mode is set, so TLS plus password
/// authentication (the usual managed-database setup) cannot log in; here a
/// given password is kept. Upstream also writes user and password into the
/// URL unescaped, so one with `@`, `:`, `/` or `#` breaks it; here they are
/// percent-encoded as Go's `url.UserPassword` would.
pub fn db_options_from_env(
    env: impl Fn(&str) -> Option<String>,
) -> Result<DbCacheOptions, CacheConfigError> {
    let get = |k: &str| env(k).unwrap_or_default();
    let mut driver = get("DB_DRIVER");
    if driver.is_empty() {
        driver = "pgx".to_string();
    }
    let (host, port, name, user, password) = (
        get("DB_HOST"),
        get("DB_PORT"),
        get("DB_NAME"),
        get("DB_USER"),
        get("DB_PASSWORD"),
    );
    let ssl_mode = get("DB_SSL_MODE").to_lowercase();
    let ssl_disabled = ssl_mode.is_empty() || ssl_mode == "disable";
    let mut missing = Vec::new();
    for (var, value) in [
        ("DB_HOST", &host),
        ("DB_PORT", &port),
        ("DB_NAME", &name),
        ("DB_USER", &user),
    ] {
        if value.is_empty() {
            missing.push(var.to_string());
        }
    }
    if ssl_disabled && password.is_empty() {
        missing.push("DB_PASSWORD".to_string());
    }
    if !missing.is_empty() {
        return Err(CacheConfigError::MissingEnv(missing));
    }
    let data_source = match driver.as_str() {
        "pgx" => {
            let mut userinfo = escape_userinfo(&user);
            if ssl_disabled || !password.is_empty() {
                userinfo.push(':');
                userinfo.push_str(&escape_userinfo(&password));
            }
            let mode = if ssl_disabled { "disable" } else { &ssl_mode };
            format!(
                "postgres://{userinfo}@{}/{name}?sslmode={mode}",
                join_host_port(&host, &port)
            )
        }
        "mysql" => format!("{user}:{password}@tcp({host}:{port})/{name}"),
        other => return Err(CacheConfigError::UnsupportedDriver(other.to_string())),
    };
    Ok(DbCacheOptions {
        driver,
        data_source,
    })
}

/// `net.JoinHostPort`: IPv6 hosts in brackets.
fn join_host_port(host: &str, port: &str) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Percent-encodes a URL user or password as Go's `url.UserPassword`
/// does: unreserved characters and `!$&'()*+,;=` stay.
fn escape_userinfo(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
            );
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `determineCacheDirectory`: the configured directory; else
/// `GIT_CACHE_DIR`; else `<user cache dir>/porch-repo-controller`, with
/// the temporary directory when there is no user cache directory.
pub fn cache_directory(
    configured: &str,
    git_cache_dir: Option<&str>,
    user_cache_dir: Option<&str>,
    temp_dir: &str,
) -> String {
    if !configured.is_empty() {
        return configured.to_string();
    }
    if let Some(dir) = git_cache_dir.filter(|d| !d.is_empty()) {
        return dir.to_string();
    }
    format!(
        "{}/{CACHE_SUBDIRECTORY}",
        user_cache_dir.unwrap_or(temp_dir)
    )
}

/// The commit identity (`simpleUserInfoProvider`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// Author name.
    pub name: String,
    /// Author e-mail.
    pub email: String,
}

/// `simpleUserInfoProvider.GetUserInfo`: `porch-controller
/// <porch-controller@kpt.dev>`, whoever asks.
pub fn user_info() -> UserInfo {
    UserInfo {
        name: COMMIT_AUTHOR_NAME.to_string(),
        email: COMMIT_AUTHOR_EMAIL.to_string(),
    }
}

/// `CacheOptions`, without the clients and resolvers the host adds (the
/// change notifier is a no-op for the standalone controller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheOptions {
    /// `DB` or `CR` (the configured value upper-cased).
    pub cache_type: String,
    /// Database settings (empty for CR).
    pub db: DbCacheOptions,
    /// Git cache directory.
    pub local_directory: String,
    /// Whether CA bundles come from the repositories' secrets.
    pub use_user_defined_ca_bundle: bool,
    /// Retries of Git operations.
    pub repo_operation_retry_attempts: i64,
    /// Commit identity.
    pub user_info: UserInfo,
    /// Who hears of PackageRevision changes.
    pub change_notifier: ChangeNotifier,
}

/// `RepoPRChangeNotifier` of the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeNotifier {
    /// Nobody (`NewNoOpRepoPRChangeNotifier`): the standalone controller
    /// has no watchers to tell.
    NoOp,
}

/// `buildCacheOptions`.
pub fn build_cache_options(
    config: &RepositoryControllerConfig,
    db: DbCacheOptions,
    cache_dir: &str,
) -> CacheOptions {
    CacheOptions {
        cache_type: config.cache_type.to_uppercase(),
        db,
        local_directory: cache_dir.to_string(),
        use_user_defined_ca_bundle: config.use_user_defined_ca_bundle,
        repo_operation_retry_attempts: config.repo_operation_retry_attempts,
        user_info: user_info(),
        change_notifier: ChangeNotifier::NoOp,
    }
}

/// The wait after failed attempt `attempt` (1-based) at creating the
/// cache, `None` when no attempt follows: `retry.OnError` with
/// `wait.Backoff{1s, x1.5, 20 steps, cap 30s}`. Reaching the cap ends the
/// backoff, so there are 9 attempts (waits 1s, 1.5s, … 17.09s) rather than
/// 20; upstream then sleeps a last 25.6s before giving up, which changes
/// nothing and is not reproduced.
pub fn cache_creation_retry_after(attempt: u32) -> Option<Duration> {
    let cap = Duration::from_secs(30).as_nanos();
    let (mut steps, mut next) = (20u32, Duration::from_secs(1).as_nanos());
    for k in 1..=attempt {
        // Attempt k failed.
        if steps <= 1 {
            return None;
        }
        steps -= 1;
        let wait = next;
        next = (next as f64 * 1.5) as i64;
        if next > cap {
            next = cap;
            steps = 0;
        }
        if k == attempt {
            return (steps > 0).then_some(Duration::from_nanos(wait));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    const BASE: &[(&str, &str)] = &[
        ("DB_HOST", "db"),
        ("DB_PORT", "5432"),
        ("DB_NAME", "porch"),
        ("DB_USER", "u"),
    ];

    /// The fixed bug: a password given with an SSL mode is kept.
    #[test]
    fn a_password_is_kept_with_ssl() {
        let mut vars = BASE.to_vec();
        vars.extend([("DB_SSL_MODE", "Require"), ("DB_PASSWORD", "p")]);
        assert_eq!(
            db_options_from_env(env(&vars)).unwrap().data_source,
            "postgres://u:p@db:5432/porch?sslmode=require"
        );
    }

    /// The fixed bug: user and password are escaped in the URL.
    #[test]
    fn userinfo_is_percent_encoded() {
        let mut vars = BASE.to_vec();
        vars.extend([("DB_PASSWORD", "p@ss:w/rd#1")]);
        assert_eq!(
            db_options_from_env(env(&vars)).unwrap().data_source,
            "postgres://u:p%40ss%3Aw%2Frd%231@db:5432/porch?sslmode=disable"
        );
    }

    #[test]
    fn every_missing_variable_is_named() {
        let err = db_options_from_env(env(&[])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing required environment variables: [DB_HOST DB_PORT DB_NAME DB_USER DB_PASSWORD]"
        );
    }

    #[test]
    fn ipv6_hosts_are_bracketed() {
        let mut vars = BASE.to_vec();
        vars.extend([("DB_HOST", "::1"), ("DB_PASSWORD", "p")]);
        let vars: Vec<_> = vars
            .into_iter()
            .filter(|(k, v)| *k != "DB_HOST" || *v == "::1")
            .collect();
        assert_eq!(
            db_options_from_env(env(&vars)).unwrap().data_source,
            "postgres://u:p@[::1]:5432/porch?sslmode=disable"
        );
    }

    #[test]
    fn cache_creation_gives_up_when_the_backoff_reaches_its_cap() {
        assert_eq!(cache_creation_retry_after(1), Some(Duration::from_secs(1)));
        assert_eq!(
            cache_creation_retry_after(2),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            cache_creation_retry_after(8),
            Some(Duration::from_nanos(17_085_937_500))
        );
        assert_eq!(cache_creation_retry_after(9), None);
        assert_eq!(cache_creation_retry_after(0), None);
    }
}
