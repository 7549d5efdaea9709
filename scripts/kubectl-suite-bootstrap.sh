# Sourced by scripts/kubectl-suite inside its per-version loop ($k kubectl, $v
# its name, $data the scratch dir, `as_token` from kubectl-suite-auth.sh):
# bootstrap tokens as `kubeadm join` uses them. The suite starts kapi with
# --enable-bootstrap-token-auth and the bootstrapsigner and tokencleaner
# controllers.
bid="k$(tr -dc 0-9 <<<"$v")aa"; bid=${bid:0:6}
btok="$bid.0123456789abcdef"
bsecret() { # id, expiration, usages...: a bootstrap token Secret through apply
  local id=$1 exp=$2; shift 2
  local lits=(--from-literal=token-id="$id" --from-literal=token-secret=0123456789abcdef
    --from-literal=expiration="$exp"
    --from-literal=auth-extra-groups=system:bootstrappers:kubeadm:default-node-token)
  for u in "$@"; do lits+=(--from-literal="usage-bootstrap-$u=true"); done
  "$k" -n kube-system create secret generic "bootstrap-token-$id" --type=bootstrap.kubernetes.io/token \
    "${lits[@]}" --dry-run=client -o json | "$k" apply -f -
}
check "$v bootstrap secret" "secret/bootstrap-token-$bid created" bsecret "$bid" 2099-01-01T00:00:00Z authentication signing
check "$v bootstrap whoami" "Username +system:bootstrap:$bid" as_token "$btok" auth whoami
check "$v bootstrap groups" "system:bootstrappers:kubeadm:default-node-token" as_token "$btok" auth whoami
check "$v bootstrap forbidden" "User \"system:bootstrap:$bid\" cannot list resource \"secrets\"" as_token "$btok" -n kube-system get secrets
check "$v bootstrap bad secret" "Unauthorized" as_token "$bid.0123456789abcdee" get ns
check "$v cluster-info" "configmap/cluster-info (created|configured|unchanged)" "$k" apply -f - <<<'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cluster-info","namespace":"kube-public"},"data":{"kubeconfig":"apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: \"\"\n"}}'
check "$v cluster-info signed" "^eyJhbGciOiJIUzI1NiIsImtpZCI6I[A-Za-z0-9_-]+\.\.[A-Za-z0-9_-]{43}$" sh -c "for i in \$(seq 50); do s=\$($k -n kube-public get cm cluster-info -o jsonpath='{.data.jws-kubeconfig-$bid}'); [ -n \"\$s\" ] && { echo \$s; exit; }; sleep 0.2; done"
xid="${bid:0:4}xx"
check "$v expired token" "secret/bootstrap-token-$xid created" bsecret "$xid" 2001-01-01T00:00:00Z authentication
check "$v expired token refused" "Unauthorized" as_token "$xid.0123456789abcdef" get ns
check "$v expired token cleaned" "NotFound" sh -c "for i in \$(seq 50); do o=\$($k -n kube-system get secret bootstrap-token-$xid 2>&1) || { echo \"\$o\"; exit; }; sleep 0.2; done"
check "$v bootstrap token deleted" "deleted" "$k" -n kube-system delete secret "bootstrap-token-$bid"
check "$v signature removed" "^gone$" sh -c "for i in \$(seq 50); do s=\$($k -n kube-public get cm cluster-info -o jsonpath='{.data.jws-kubeconfig-$bid}'); [ -z \"\$s\" ] && { echo gone; exit; }; sleep 0.2; done"
