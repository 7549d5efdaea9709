# Server-side apply checks for scripts/kubectl-suite (sourced; uses its `check`).
# Built-in kinds here; a custom resource is applied server-side (two managers on
# a list map, conflict, --force-conflicts) in scripts/kubectl-suite-crd.sh.

ssa_deploy() { # namespace replicas
cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: ssa-web, namespace: $1}
spec:
  replicas: $2
  selector: {matchLabels: {app: ssa-web}}
  template:
    metadata: {labels: {app: ssa-web}}
    spec:
      containers:
      - {name: nginx, image: "nginx:1.25", ports: [{containerPort: 80}]}
YAML
}

ssa_manifest() { # namespace replicas cm-data
ssa_deploy "$1" "$2"
cat <<YAML
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ssa-cm, namespace: $1}
data: $3
YAML
}

csa_cm() { # namespace value
  echo "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"csa-cm\",\"namespace\":\"$1\"},\"data\":{\"k\":\"$2\"}}"
}

ssa_pod() { # namespace label-value
  echo "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"csa-pod\",\"namespace\":\"$1\",\"labels\":{\"a\":\"$2\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}"
}

ssa_suite() { # kubectl version namespace
  local k=$1 v=$2 ns=$3
  check "$v ssa create" "deployment.apps/ssa-web serverside-applied" "$k" apply --server-side -f - <<<"$(ssa_manifest "$ns" 2 "{a: '1', b: '2'}")"
  check "$v ssa manager" "kubectl Apply" "$k" -n "$ns" get deploy ssa-web -o "jsonpath={.metadata.managedFields[0].manager} {.metadata.managedFields[0].operation}"
  check "$v ssa fieldsV1" "f:replicas" "$k" -n "$ns" get deploy ssa-web --show-managed-fields -o yaml
  check "$v ssa unchanged" "configmap/ssa-cm serverside-applied" "$k" apply --server-side -f - <<<"$(ssa_manifest "$ns" 2 "{a: '1', b: '2'}")"
  check "$v ssa conflict" "Apply failed with 1 conflict: conflict with \"kubectl\": \.spec\.replicas" "$k" apply --server-side --field-manager=other -f - <<<"$(ssa_deploy "$ns" 5)"
  check "$v ssa not changed by conflict" "^2$" "$k" -n "$ns" get deploy ssa-web -o "jsonpath={.spec.replicas}"
  check "$v ssa dry-run" "serverside-applied \(server dry run\)" "$k" apply --server-side --force-conflicts --dry-run=server --field-manager=other -f - <<<"$(ssa_deploy "$ns" 7)"
  check "$v ssa dry-run stored nothing" "^2$" "$k" -n "$ns" get deploy ssa-web -o "jsonpath={.spec.replicas}"
  check "$v ssa force" "deployment.apps/ssa-web serverside-applied" "$k" apply --server-side --force-conflicts --field-manager=other -f - <<<"$(ssa_deploy "$ns" 5)"
  check "$v ssa forced value" "^5$" "$k" -n "$ns" get deploy ssa-web -o "jsonpath={.spec.replicas}"
  check "$v ssa other owns replicas" "other" "$k" -n "$ns" get deploy ssa-web -o "jsonpath={.metadata.managedFields[*].manager}"
  check "$v ssa drop key" "serverside-applied" "$k" apply --server-side --force-conflicts -f - <<<"$(ssa_manifest "$ns" 5 "{a: '1'}")"
  check "$v ssa key removed" "^1-$" "$k" -n "$ns" get cm ssa-cm -o "jsonpath={.data.a}-{.data.b}"
  check "$v csa create" "configmap/csa-cm created" "$k" apply -f - <<<"$(csa_cm "$ns" v1)"
  check "$v csa to ssa" "configmap/csa-cm serverside-applied" "$k" apply --server-side -f - <<<"$(csa_cm "$ns" v2)"
  check "$v csa to ssa value" "^v2$" "$k" -n "$ns" get cm csa-cm -o "jsonpath={.data.k}"
  check "$v ssa to csa" "configmap/csa-cm configured" "$k" apply -f - <<<"$(csa_cm "$ns" v3)"
  check "$v ssa to csa value" "^v3$" "$k" -n "$ns" get cm csa-cm -o "jsonpath={.data.k}"
  # A pod's admission-added fields (service account volume, priority, ...) stay
  # out of the creating manager's set, so the migration to server-side apply
  # does not hand them to kubectl, and the next apply leaves them alone.
  check "$v csa pod" "pod/csa-pod created" "$k" apply -f - <<<"$(ssa_pod "$ns" one)"
  check "$v csa pod to ssa" "pod/csa-pod serverside-applied" "$k" apply --server-side -f - <<<"$(ssa_pod "$ns" one)"
  check "$v ssa pod again" "pod/csa-pod serverside-applied" "$k" apply --server-side -f - <<<"$(ssa_pod "$ns" two)"
  check "$v ssa pod label" "^two$" "$k" -n "$ns" get pod csa-pod -o "jsonpath={.metadata.labels.a}"
  check "$v ssa pod delete" "deleted" "$k" -n "$ns" delete pod csa-pod
  check "$v ssa delete" "deleted" "$k" -n "$ns" delete deploy ssa-web
  check "$v ssa missing key" "failed to create typed patch object \\($ns/ssa-bad; apps/v1, Kind=Deployment\\): \\.spec\\.template\\.spec\\.containers: element 0: associative list with keys has an element that omits key field \"name\"" "$k" apply --server-side -f - <<<"$(ssa_deploy "$ns" 1 | sed 's/name: ssa-web, namespace/name: ssa-bad, namespace/; s/{name: nginx, image/{image/')"
  check "$v ssa csa create entry" '"f:strategy":\{"f:rollingUpdate":\{".":\{\},"f:maxSurge":\{\},"f:maxUnavailable":\{\}\},"f:type":\{\}\},"f:template":\{"f:metadata":\{"f:labels":\{".":\{\}' "$k" -n "$ns" get deploy web -o 'jsonpath={.metadata.managedFields[?(@.manager=="kubectl-client-side-apply")].fieldsV1}'
}
