# CustomResourceDefinition checks for scripts/kubectl-suite (sourced; uses its
# `check`): a definition applied and established, its objects listed with the
# printer columns (priority 1 only with `-o wide`), explained from the OpenAPI,
# rejected by a CEL rule, status written through the status subresource only,
# scaled, applied server-side, and gone with the definition — objects too (a
# definition applied again finds none).

crd_def() {
cat <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    - {name: Image, type: string, priority: 1, jsonPath: .spec.image}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: The desired schedule of a CronTab.
            x-kubernetes-validations:
            - {rule: "!has(self.replicas) || self.replicas <= 5 || self.image != 'busybox'", message: busybox may not run more than 5 replicas}
            properties:
              cronSpec: {type: string, description: "When the job runs, in cron syntax."}
              image: {type: string, default: busybox}
              replicas: {type: integer, minimum: 0}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties: {name: {type: string}, port: {type: integer}}
          status:
            type: object
            properties: {replicas: {type: integer}}
YAML
}

crontab_obj() { # name replicas
  echo "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\",\"metadata\":{\"name\":\"$1\"},\"spec\":{\"cronSpec\":\"0 3 * * *\",\"replicas\":$2}}"
}

crontab_ports() { # name port-name port
  echo "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\",\"metadata\":{\"name\":\"$1\"},\"spec\":{\"ports\":[{\"name\":\"$2\",\"port\":$3}]}}"
}

# `kubectl explain` once the rebuilt OpenAPI documents list the kind.
explain_when_ready() { # kubectl what
  local out
  for _ in $(seq 50); do
    out=$("$1" explain "$2" 2>&1) && { echo "$out"; return 0; }
    sleep 0.2
  done
  echo "$out"; return 1
}

crd_suite() { # kubectl version namespace
  local k=$1 v=$2 ns=$3 crd=crontabs.stable.example.com
  check "$v crd apply" "customresourcedefinition.apiextensions.k8s.io/$crd created" "$k" apply -f - <<<"$(crd_def)"
  check "$v crd established" "condition met" "$k" wait --for=condition=Established --timeout=10s "crd/$crd"
  check "$v cr create" "crontab.stable.example.com/nightly created" "$k" -n "$ns" apply -f - <<<"$(crontab_obj nightly 2)"
  # A client-side apply of a change: the OpenAPI offers no strategic merge
  # patch for custom resources, so kubectl sends one it accepts.
  check "$v cr apply change" "crontab.stable.example.com/nightly configured" "$k" -n "$ns" apply -f - <<<"$(crontab_obj nightly 3)"
  check "$v cr apply back" "crontab.stable.example.com/nightly configured" "$k" -n "$ns" apply -f - <<<"$(crontab_obj nightly 2)"
  check "$v cr columns" "NAME +SPEC +REPLICAS +AGE" "$k" -n "$ns" get crontabs
  check "$v cr row" "nightly +0 3 \* \* \* +2 +[0-9]+s" "$k" -n "$ns" get crontabs
  check "$v cr short name" "nightly" "$k" -n "$ns" get ct
  check "$v cr wide" "NAME +SPEC +REPLICAS +AGE +IMAGE" "$k" -n "$ns" get crontabs -o wide
  check "$v cr wide row" "nightly +0 3 \* \* \* +2 +[0-9]+s +busybox" "$k" -n "$ns" get crontabs -o wide
  check "$v cr defaulted" "^busybox$" "$k" -n "$ns" get crontab nightly -o "jsonpath={.spec.image}"
  check "$v explain" "When the job runs, in cron syntax" explain_when_ready "$k" crontab.spec
  check "$v cel rejected" "busybox may not run more than 5 replicas" "$k" -n "$ns" apply -f - <<<"$(crontab_obj greedy 9)"
  check "$v cr status patch" "crontab.stable.example.com/nightly patched" "$k" -n "$ns" patch crontab nightly --subresource=status --type=merge -p '{"status":{"replicas":3}}'
  check "$v cr status" "^3$" "$k" -n "$ns" get crontab nightly -o "jsonpath={.status.replicas}"
  check "$v cr status via main" "patched \(no change\)" "$k" -n "$ns" patch crontab nightly --type=merge -p '{"status":{"replicas":7}}'
  check "$v cr status kept" "^3$" "$k" -n "$ns" get crontab nightly --subresource=status -o "jsonpath={.status.replicas}"
  check "$v cr scale" "crontab.stable.example.com/nightly scaled" "$k" -n "$ns" scale crontab nightly --replicas=4
  check "$v cr scaled" "^4$" "$k" -n "$ns" get crontab nightly -o "jsonpath={.spec.replicas}"
  check "$v cr ssa" "crontab.stable.example.com/ports serverside-applied" "$k" -n "$ns" apply --server-side --field-manager=alice -f - <<<"$(crontab_ports ports http 80)"
  check "$v cr ssa second manager" "serverside-applied" "$k" -n "$ns" apply --server-side --field-manager=bob -f - <<<"$(crontab_ports ports metrics 9090)"
  check "$v cr ssa merged" "^http metrics$" "$k" -n "$ns" get crontab ports -o "jsonpath={.spec.ports[*].name}"
  check "$v cr ssa conflict" "conflict with \"alice\"" "$k" -n "$ns" apply --server-side --field-manager=bob -f - <<<"$(crontab_ports ports http 8080)"
  check "$v cr ssa force" "serverside-applied" "$k" -n "$ns" apply --server-side --force-conflicts --field-manager=bob -f - <<<"$(crontab_ports ports http 8080)"
  check "$v crd delete" "customresourcedefinition.apiextensions.k8s.io \"$crd\" deleted" "$k" delete crd "$crd"
  check "$v crd gone" "NotFound|not found" "$k" get crd "$crd"
  check "$v crontabs gone" "doesn't have a resource type \"crontabs\"|could not find the requested resource" "$k" -n "$ns" get crontabs
  # Applied again, the definition finds none of the old objects.
  check "$v crd reapply" "customresourcedefinition.apiextensions.k8s.io/$crd created" "$k" apply -f - <<<"$(crd_def)"
  check "$v crd reestablished" "condition met" "$k" wait --for=condition=Established --timeout=10s "crd/$crd"
  check "$v old objects gone" "No resources found in $ns namespace" "$k" -n "$ns" get crontabs
  check "$v crd delete again" "deleted" "$k" delete crd "$crd"
}
