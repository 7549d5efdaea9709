# Sourced by scripts/kubectl-suite inside its per-version loop ($k kubectl, $v
# its name, $ns the suite namespace, $data the scratch dir, $port the port):
# authentication and authorization as users see them — `auth can-i` (with
# --list and --as), `auth whoami`, impersonation, `create token`, tokens.
# The suite starts kapi with --token-auth-file "$data/tokens.csv" (bob-token → bob).
as_token() { # token, kubectl args...: run $k with only a bearer token
  local token=$1; shift
  "$k" --kubeconfig=/dev/null --server="https://127.0.0.1:$port" \
    --certificate-authority="$data/pki/ca.crt" --token="$token" "$@"
}
check "$v can-i yes" "^yes$" "$k" auth can-i create pods -n "$ns"
check "$v can-i no --as" "^no$" "$k" auth can-i list configmaps -n "$ns" --as=bob
check "$v can-i --list" '^\*\.\* +\[\] +\[\] +\[\*\]' "$k" auth can-i --list -n "$ns"
check "$v can-i --list --as" "selfsubjectaccessreviews.authorization.k8s.io +\[\] +\[\] +\[create\]" "$k" auth can-i --list -n "$ns" --as=bob
check "$v --as forbidden" "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"$ns\"" "$k" -n "$ns" get cm --as=bob
check "$v --as-group" "^yes$" "$k" auth can-i delete secrets -n "$ns" --as=bob --as-group=system:masters
check "$v token user forbidden" "User \"bob\" cannot list resource \"configmaps\"" as_token bob-token -n "$ns" get cm
check "$v bad token" "Unauthorized" as_token not-a-token get ns
check "$v create sa" "serviceaccount/auth-robot created" "$k" -n "$ns" create serviceaccount auth-robot
check "$v create rolebinding sa" "rolebinding.rbac.authorization.k8s.io/auth-robot-view created" "$k" -n "$ns" create rolebinding auth-robot-view --clusterrole=view --serviceaccount="$ns:auth-robot"
check "$v create rolebinding edit" "rolebinding.rbac.authorization.k8s.io/auth-robot-edit created" "$k" -n "$ns" create rolebinding auth-robot-edit --clusterrole=edit --serviceaccount="$ns:auth-robot-editor"
tok=$("$k" -n "$ns" create token auth-robot --duration=20m 2>&1)
check "$v create token" '^ey[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' echo "$tok"
check "$v sa token reads" "kube-root-ca.crt" as_token "$tok" -n "$ns" get cm
check "$v sa token limited" "cannot list resource \"secrets\"" as_token "$tok" -n "$ns" get secrets
check "$v short token refused" "may not specify a duration less than 10 minutes" "$k" -n "$ns" create token auth-robot --duration=5m
# `auth whoami` asks authentication.k8s.io/v1 from 1.28 on (1.27 asks v1beta1,
# which kapi serves too).
check "$v whoami" "Username +kubernetes-admin" "$k" auth whoami
check "$v whoami --as" "Username +bob" "$k" auth whoami --as=bob
check "$v whoami sa" "Username +system:serviceaccount:$ns:auth-robot" as_token "$tok" auth whoami
# The rest of the bootstrap policy: component, node and controller roles.
check "$v can-i kube-proxy" "^yes$" "$k" auth can-i watch endpointslices.discovery.k8s.io --as=system:kube-proxy
check "$v can-i scheduler binding" "^yes$" "$k" auth can-i create pods --subresource=binding -n "$ns" --as=system:kube-scheduler
check "$v can-i controller sa" "^yes$" "$k" auth can-i create pods -n "$ns" --as=system:serviceaccount:kube-system:replicaset-controller
check "$v can-i controller sa no" "^no$" "$k" auth can-i get secrets -n "$ns" --as=system:serviceaccount:kube-system:replicaset-controller
check "$v can-i edit events" "^yes$" "$k" auth can-i create events -n "$ns" --as=system:serviceaccount:$ns:auth-robot-editor
check "$v issuer discovery" '"jwks_uri":"https://' as_token "$tok" get --raw /.well-known/openid-configuration
check "$v jwks" '"kty":"EC"' as_token "$tok" get --raw /openid/v1/jwks
# Review objects created from files without metadata (kubectl validates them
# client-side against /openapi/v2, where metadata is never required).
check "$v create tokenreview" '"username":"bob"' "$k" create -o 'jsonpath={.status.user}' -f - <<<'{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"bob-token"}}'
check "$v create sar" '^\{"allowed":false\}$' "$k" create -o 'jsonpath={.status}' -f - <<<"{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\",\"spec\":{\"user\":\"bob\",\"resourceAttributes\":{\"verb\":\"list\",\"resource\":\"configmaps\",\"namespace\":\"$ns\"}}}"
