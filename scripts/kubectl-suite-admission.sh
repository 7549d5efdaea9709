# Sourced by scripts/kubectl-suite inside its per-version loop ($k kubectl, $v
# its name): admission as users meet it — a ResourceQuota refusing what is
# over its limit, LimitRange defaults on a pod, PodSecurity enforcing a
# namespace's level, a ValidatingAdmissionPolicy refusing `kubectl scale`.
# Works in its own namespace, deleted at the end.
ans="adm-${v//./-}"
check "$v adm ns" "namespace/$ans created" "$k" create namespace "$ans"
check "$v adm quota" "resourcequota/q created" "$k" -n "$ans" create quota q --hard=services=1
for _ in $(seq 100); do
  [ "$("$k" -n "$ans" get quota q -o 'jsonpath={.status.hard.services}' 2>/dev/null)" = 1 ] && break; sleep 0.1
done
check "$v adm svc 1" "service/one created" "$k" -n "$ans" create service clusterip one --tcp=80
check "$v adm quota exceeded" 'services "two" is forbidden: exceeded quota: q, requested: services=1, used: services=1, limited: services=1' "$k" -n "$ans" create service clusterip two --tcp=80
check "$v adm quota used" '^1$' "$k" -n "$ans" get quota q -o 'jsonpath={.status.used.services}'
check "$v adm limitrange" "limitrange/lr created" "$k" -n "$ans" apply -f - <<<'{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"lr"},"spec":{"limits":[{"type":"Container","default":{"memory":"256Mi"}}]}}'
for _ in $(seq 100); do "$k" -n "$ans" get sa default >/dev/null 2>&1 && break; sleep 0.1; done
check "$v adm run" "pod/p created" "$k" -n "$ans" run p --image=nginx
check "$v adm lr default" '^256Mi$' "$k" -n "$ans" get pod p -o 'jsonpath={.spec.containers[0].resources.limits.memory}'
check "$v adm sa token" 'kube-api-access-' "$k" -n "$ans" get pod p -o 'jsonpath={.spec.volumes[0].name}'
# kubectl scale through a ValidatingAdmissionPolicy on deployments/scale
# (bound cluster-wide, so its expression only looks at this namespace).
check "$v adm deploy" "deployment.apps/d created" "$k" -n "$ans" create deployment d --image=nginx
check "$v adm scale policy" "validatingadmissionpolicy.admissionregistration.k8s.io/$ans-scale created" "$k" apply -f - <<<"{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":\"ValidatingAdmissionPolicy\",\"metadata\":{\"name\":\"$ans-scale\"},\"spec\":{\"matchConstraints\":{\"resourceRules\":[{\"operations\":[\"UPDATE\"],\"apiGroups\":[\"apps\"],\"apiVersions\":[\"v1\"],\"resources\":[\"deployments/scale\"]}]},\"validations\":[{\"expression\":\"request.namespace != '$ans' || object.spec.replicas <= 3\",\"message\":\"at most 3 replicas\"}]}}"
check "$v adm scale binding" "validatingadmissionpolicybinding.admissionregistration.k8s.io/$ans-scale created" "$k" apply -f - <<<"{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":\"ValidatingAdmissionPolicyBinding\",\"metadata\":{\"name\":\"$ans-scale\"},\"spec\":{\"policyName\":\"$ans-scale\",\"validationActions\":[\"Deny\"]}}"
check "$v adm scale allowed" "deployment.apps/d scaled" "$k" -n "$ans" scale deploy d --replicas=2
# kubectl prints a 422 with its cause, as against kube-apiserver.
check "$v adm scale denied" "The deployments \"d\" is invalid: : ValidatingAdmissionPolicy '$ans-scale' with binding '$ans-scale' denied request: at most 3 replicas" "$k" -n "$ans" scale deploy d --replicas=5
check "$v adm scale kept" '^2$' "$k" -n "$ans" get deploy d -o 'jsonpath={.spec.replicas}'
check "$v adm scale unbind" "deleted" "$k" delete validatingadmissionpolicybinding "$ans-scale"
check "$v adm scale unpolicy" "deleted" "$k" delete validatingadmissionpolicy "$ans-scale"
check "$v adm pss label" "namespace/$ans labeled" "$k" label ns "$ans" pod-security.kubernetes.io/enforce=restricted
check "$v adm pss refused" 'pods "q" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false' "$k" -n "$ans" run q --image=nginx
check "$v adm ns delete" "namespace \"$ans\" deleted" "$k" delete namespace "$ans" --wait=false
