//! kyaml's field order (`FieldOrder` in `kyaml/yaml/order.go`), used to sort
//! the keys of maps the SDK builds from typed values.

/// Relative ordering of well-known fields; keys not listed sort after them,
/// alphabetically. A name listed twice keeps its later position, as in Go.
const FIELD_SORT_ORDER: &[&str] = &[
    // top-level metadata
    "name",
    "generateName",
    "namespace",
    "clusterName",
    "apiVersion",
    "kind",
    "metadata",
    "type",
    "labels",
    "annotations",
    "spec",
    "status",
    // secret and configmap
    "stringData",
    "data",
    "binaryData",
    // cronjobspec, daemonsetspec, deploymentspec, statefulsetspec, jobspec fields
    "parallelism",
    "completions",
    "activeDeadlineSeconds",
    "backoffLimit",
    "replicas",
    "selector",
    "manualSelector",
    "template",
    "ttlSecondsAfterFinished",
    "volumeClaimTemplates",
    "service",
    "serviceName",
    "podManagementPolicy",
    "updateStrategy",
    "strategy",
    "minReadySeconds",
    "revision",
    "revisionHistoryLimit",
    "paused",
    "progressDeadlineSeconds",
    // podspec scalars
    "restartPolicy",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "dnsPolicy",
    "serviceAccountName",
    "serviceAccount",
    "automountServiceAccountToken",
    "nodeName",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "shareProcessNamespace",
    "hostname",
    "subdomain",
    "schedulerName",
    "priorityClassName",
    "priority",
    "runtimeClassName",
    "enableServiceLinks",
    // podspec lists and maps
    "nodeSelector",
    "hostAliases",
    // podspec objects
    "initContainers",
    "containers",
    "volumes",
    "securityContext",
    "imagePullSecrets",
    "affinity",
    "tolerations",
    "dnsConfig",
    "readinessGates",
    // containers
    "image",
    "command",
    "args",
    "workingDir",
    "ports",
    "envFrom",
    "env",
    "resources",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
    // service
    "clusterIP",
    "externalIPs",
    "loadBalancerIP",
    "loadBalancerSourceRanges",
    "externalName",
    "externalTrafficPolicy",
    "sessionAffinity",
    // ports
    "protocol",
    "port",
    "targetPort",
    "hostPort",
    "containerPort",
    "hostIP",
    // volumemount
    "readOnly",
    "mountPath",
    "subPath",
    "subPathExpr",
    "mountPropagation",
    // envvar + envvarsource
    "value",
    "valueFrom",
    "fieldRef",
    "resourceFieldRef",
    "configMapKeyRef",
    "secretKeyRef",
    "prefix",
    "configMapRef",
    "secretRef",
];

/// kyaml's `FieldOrder[key]`: the 1-based precedence of a well-known key.
pub fn field_order(key: &str) -> Option<usize> {
    FIELD_SORT_ORDER
        .iter()
        .rposition(|k| *k == key)
        .map(|i| i + 1)
}

/// The comparison kyaml's sort uses: known fields first by precedence,
/// then the rest by byte order.
pub fn compare_keys(a: &str, b: &str) -> std::cmp::Ordering {
    match (field_order(a), field_order(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicated_names_take_the_later_position() {
        assert!(field_order("activeDeadlineSeconds") > field_order("restartPolicy"));
        assert!(field_order("securityContext") > field_order("imagePullPolicy"));
    }

    #[test]
    fn condition_and_function_keys_sort_as_porch_writes_them() {
        let mut keys = vec!["type", "status", "reason", "message"];
        keys.sort_by(|a, b| compare_keys(a, b));
        assert_eq!(keys, ["type", "status", "message", "reason"]);
        let mut keys = vec!["configMap", "image", "name"];
        keys.sort_by(|a, b| compare_keys(a, b));
        assert_eq!(keys, ["name", "image", "configMap"]);
    }
}
