//! The Porch resources typed for the Kubernetes client: Porch's aggregated
//! `porch.kpt.dev/v1alpha1` PackageRevision and PackageRevisionResources
//! (no CRD, so [`Resource`] is implemented by hand) and
//! `config.porch.kpt.dev` Repository, PackageVariant and
//! PackageVariantSet.
//!
//! Each wraps the core's spec and status types with Kubernetes'
//! `ObjectMeta`; [`KubeResource::to_core`] and [`KubeResource::from_core`]
//! convert to and from the core's object types through their common JSON
//! form (the field names are the API server's).

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::NamespaceResourceScope;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A typed resource that converts to and from a core object.
pub trait KubeResource: Resource<DynamicType = ()> + Serialize + DeserializeOwned {
    /// The core's type of the same object.
    type Core: Serialize + DeserializeOwned;

    /// The core object.
    fn to_core(&self) -> Result<Self::Core, serde_json::Error> {
        serde_json::from_value(serde_json::to_value(self)?)
    }

    /// From a core object (`apiVersion` and `kind` set).
    fn from_core(core: &Self::Core) -> Result<Self, serde_json::Error> {
        let mut v = serde_json::to_value(core)?;
        if let Some(obj) = v.as_object_mut() {
            obj.insert(
                "apiVersion".into(),
                Self::api_version(&()).into_owned().into(),
            );
            obj.insert("kind".into(), Self::kind(&()).into_owned().into());
        }
        serde_json::from_value(v)
    }
}

macro_rules! porch_resource {
    (
        $(#[$doc:meta])*
        $name:ident, core = $core:ty, spec = $spec:ty, status = $status:ty,
        group = $group:literal, version = $version:literal,
        kind = $kind:literal, plural = $plural:literal
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// API version (`group/version`).
            #[serde(default)]
            pub api_version: String,
            /// Kind.
            #[serde(default)]
            pub kind: String,
            /// Metadata.
            #[serde(default)]
            pub metadata: ObjectMeta,
            /// Desired state.
            #[serde(default)]
            pub spec: $spec,
            /// Observed state.
            #[serde(default)]
            pub status: $status,
        }

        impl Resource for $name {
            type DynamicType = ();
            type Scope = NamespaceResourceScope;

            fn kind(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($kind)
            }
            fn group(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($group)
            }
            fn version(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($version)
            }
            fn api_version(_: &()) -> Cow<'_, str> {
                Cow::Borrowed(concat!($group, "/", $version))
            }
            fn plural(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($plural)
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }

        impl KubeResource for $name {
            type Core = $core;
        }
    };
}

porch_resource!(
    /// Porch's PackageRevision (`porch.kpt.dev/v1alpha1`, aggregated API).
    PackageRevision,
    core = pv_core::api::PackageRevision,
    spec = pv_core::api::PackageRevisionSpec,
    status = pv_core::api::package_revision::PackageRevisionStatus,
    group = "porch.kpt.dev", version = "v1alpha1",
    kind = "PackageRevision", plural = "packagerevisions"
);

porch_resource!(
    /// Porch's PackageRevisionResources (`porch.kpt.dev/v1alpha1`,
    /// aggregated API): a revision's files.
    PackageRevisionResources,
    core = pv_core::api::PackageRevisionResources,
    spec = pv_core::api::package_revision::PackageRevisionResourcesSpec,
    status = pv_core::api::package_revision::PackageRevisionResourcesStatus,
    group = "porch.kpt.dev", version = "v1alpha1",
    kind = "PackageRevisionResources", plural = "packagerevisionresources"
);

porch_resource!(
    /// Porch's Repository (`config.porch.kpt.dev/v1alpha1`).
    Repository,
    core = pv_core::api::repository::Repository,
    spec = pv_core::api::repository::RepositorySpec,
    status = Option<pv_core::api::repository::RepositoryStatus>,
    group = "config.porch.kpt.dev", version = "v1alpha1",
    kind = "Repository", plural = "repositories"
);

porch_resource!(
    /// PackageVariant (`config.porch.kpt.dev/v1alpha1`, our CRD).
    PackageVariant,
    core = pv_core::api::PackageVariant,
    spec = pv_core::api::PackageVariantSpec,
    status = pv_core::api::PackageVariantStatus,
    group = "config.porch.kpt.dev", version = "v1alpha1",
    kind = "PackageVariant", plural = "packagevariants"
);

porch_resource!(
    /// PackageVariantSet (`config.porch.kpt.dev/v1alpha2`, our CRD).
    PackageVariantSet,
    core = pv_core::variantset::PackageVariantSet,
    spec = pv_core::variantset::types::PackageVariantSetSpec,
    status = pv_core::variantset::types::PackageVariantSetStatus,
    group = "config.porch.kpt.dev", version = "v1alpha2",
    kind = "PackageVariantSet", plural = "packagevariantsets"
);
