//! Skipping PackageVariants whose reconcile would write nothing.
//!
//! A reconcile is a function of what it reads: the variant, the revisions
//! of its upstream and downstream packages and those it owns (with their
//! resources), the namespace's objects when it injects, how drafts are
//! rendered, and the code deciding. [`QuietDigests`] keeps, per variant, a
//! digest of all of that as of a reconcile that wrote nothing; a later run
//! whose digest of the same is equal skips the variant, without reading
//! its revisions or calling the core.
//!
//! The digest is only as complete as the stores' fingerprints
//! ([`crate::store::PackageRevisionStore::fingerprint`]): where a store
//! cannot give one, no digest is made and nothing is skipped. Digests are
//! recorded only from a pass that wrote nothing at all, so what was read
//! then is what the stores hold at the end of it.

use std::collections::BTreeMap;

use pv_core::api::PackageVariant;
use serde::{Deserialize, Serialize};

use super::{Ctx, ReconcileError};
use crate::store::fingerprint_of;

/// Digests of the last quiet reconcile of each PackageVariant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuietDigests {
    /// The code that made the decisions ([`build_identity`]): digests of
    /// other code are dropped ([`QuietDigests::for_identity`]).
    pub identity: String,
    /// `<namespace>/<name>` to the digest of what its last quiet reconcile
    /// read.
    pub variants: BTreeMap<String, String>,
}

impl QuietDigests {
    /// `self` if it was made by `identity`, else empty digests for it.
    pub fn for_identity(self, identity: &str) -> Self {
        if self.identity == identity {
            self
        } else {
            QuietDigests {
                identity: identity.to_string(),
                variants: BTreeMap::new(),
            }
        }
    }

    /// Whether a digest of `pv` is recorded.
    pub(super) fn has(&self, pv: &PackageVariant) -> bool {
        self.variants.contains_key(&key(pv))
    }

    /// Whether `pv`'s digest is the recorded one.
    pub(super) fn is_quiet(&self, pv: &PackageVariant, digest: &str) -> bool {
        self.variants.get(&key(pv)).is_some_and(|d| d == digest)
    }

    /// After a pass that wrote nothing: `quiet` are the digests of the
    /// variants whose reconcile succeeded in it (skipped ones included),
    /// and they replace every recorded digest.
    pub(super) fn record(&mut self, quiet: BTreeMap<String, String>) {
        self.variants = quiet;
    }
}

/// `<namespace>/<name>` of a variant.
pub(super) fn key(pv: &PackageVariant) -> String {
    format!("{}/{}", pv.metadata.namespace, pv.metadata.name)
}

/// The code deciding: the package version, the core, and the executable
/// (its size and modification time, so that any rebuild counts as other
/// code).
pub fn build_identity(core_name: &str) -> String {
    let exe = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map(|m| {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            format!("{} bytes, modified {modified}", m.len())
        })
        .unwrap_or_else(|e| format!("unknown executable ({e})"));
    format!(
        "porch-variants {} core {core_name}; {exe}",
        env!("CARGO_PKG_VERSION")
    )
}

/// Per pass: the digest of each namespace's objects (which no reconcile
/// writes).
#[derive(Default)]
pub(super) struct PassMemo {
    objects: BTreeMap<String, String>,
}

/// [`variant_digest`], `None` where a store failed to answer (the variant
/// is then reconciled, and its own reads say what failed); an error only
/// when the failure is fatal.
pub(super) fn digest_of(
    ctx: &Ctx<'_>,
    pv: &PackageVariant,
    memo: &mut PassMemo,
) -> Result<Option<String>, ReconcileError> {
    match variant_digest(ctx, pv, memo) {
        Ok(d) => Ok(d),
        Err(e) if e.is_fatal() => Err(e),
        Err(e) => {
            tracing::debug!(variant = %key(pv), error = %e, "no digest");
            Ok(None)
        }
    }
}

/// The digest of everything `pv`'s reconcile reads, or `None` where a
/// store cannot fingerprint what it answers.
fn variant_digest(
    ctx: &Ctx<'_>,
    pv: &PackageVariant,
    memo: &mut PassMemo,
) -> Result<Option<String>, ReconcileError> {
    let ns = pv.metadata.namespace.as_str();
    let mut parts: Vec<Vec<u8>> = vec![
        ctx.core.name().as_bytes().to_vec(),
        serde_json::to_vec(pv).map_err(|e| ReconcileError::Refused(e.to_string()))?,
        format!(
            "declares sources {}; renders {:?}",
            ctx.revisions.declares_sources(),
            ctx.renderer.map(|r| r.options())
        )
        .into_bytes(),
    ];
    for filter in &super::package_variant::revision_filters(pv) {
        match ctx.revisions.fingerprint(ns, filter)? {
            Some(f) => parts.push(f.into_bytes()),
            None => return Ok(None),
        }
    }
    if !pv.spec.injectors.is_empty() {
        if !memo.objects.contains_key(ns) {
            let objects = ctx.objects.list_objects(ns)?;
            let bytes =
                serde_json::to_vec(&objects).map_err(|e| ReconcileError::Refused(e.to_string()))?;
            memo.objects
                .insert(ns.to_string(), fingerprint_of([bytes.as_slice()]));
        }
        parts.push(memo.objects[ns].as_bytes().to_vec());
    }
    Ok(Some(fingerprint_of(parts.iter().map(Vec::as_slice))))
}
