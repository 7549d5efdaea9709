# Sourced by scripts/kubectl-suite inside its per-version loop ($k kubectl,
# $v its name, $ns the suite namespace, $data the scratch dir): RBAC,
# scheduling, storage, certificates, flow control and the review APIs.
# kubectl 1.33 may send protobuf on `create`, so it creates through apply.
old=false; [ "$v" = kubectl.1.27 ] && old=true
if $old; then
  check "$v create role" "role.rbac.authorization.k8s.io/pod-reader created" "$k" -n "$ns" create role pod-reader --verb=get --verb=list --resource=pods
  check "$v create rolebinding" "rolebinding.rbac.authorization.k8s.io/readers created" "$k" -n "$ns" create rolebinding readers --role=pod-reader --user=alice --serviceaccount="$ns:builder"
  check "$v create clusterrole agg" "clusterrole.rbac.authorization.k8s.io/agg-$ns created" "$k" create clusterrole "agg-$ns" --aggregation-rule="suite/agg-$ns=true"
else
  check "$v apply role" "role.rbac.authorization.k8s.io/pod-reader created" "$k" apply -f - <<<"{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\",\"metadata\":{\"name\":\"pod-reader\",\"namespace\":\"$ns\"},\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\",\"list\"]}]}"
  check "$v apply rolebinding" "rolebinding.rbac.authorization.k8s.io/readers created" "$k" apply -f - <<<"{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"readers\",\"namespace\":\"$ns\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"pod-reader\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\",\"apiGroup\":\"rbac.authorization.k8s.io\"},{\"kind\":\"ServiceAccount\",\"name\":\"builder\",\"namespace\":\"$ns\"}]}"
  check "$v apply clusterrole agg" "clusterrole.rbac.authorization.k8s.io/agg-$ns created" "$k" apply -f - <<<"{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"agg-$ns\"},\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"suite/agg-$ns\":\"true\"}}]}}"
fi
check "$v get rolebinding" "readers +Role/pod-reader +[0-9]+s" "$k" -n "$ns" get rolebinding readers
check "$v rolebinding wide" "readers +Role/pod-reader +[0-9]+s +alice +$ns/builder" "$k" -n "$ns" get rolebinding readers -o wide
check "$v roleRef immutable" "cannot change roleRef" "$k" -n "$ns" patch rolebinding readers --type=merge -p '{"roleRef":{"name":"other"}}'
check "$v apply labelled clusterrole" "created" "$k" apply -f - <<<"{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"part-$ns\",\"labels\":{\"suite/agg-$ns\":\"true\"}},\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"verbs\":[\"get\"]}]}"
check "$v aggregated rules" "secrets" sh -c "for i in \$(seq 30); do r=\$($k get clusterrole agg-$ns -o jsonpath='{.rules[*].resources}'); case \$r in *secrets*) echo \$r; exit;; esac; sleep 0.2; done"
check "$v get clusterroles" "NAME +CREATED AT" "$k" get clusterroles
check "$v explain aggregationRule" "clusterRoleSelectors" "$k" explain clusterrole.aggregationRule
check "$v get priorityclasses" "system-node-critical +2000001000 +false" "$k" get priorityclasses
check "$v system class protected" "cannot be deleted" "$k" delete priorityclass system-cluster-critical
check "$v get flowschemas" "exempt +exempt +1 +<none> +[0-9a-z]+ +False" "$k" get flowschemas
check "$v get prioritylevels" "catch-all +Limited +5 +<none>" "$k" get prioritylevelconfigurations
check "$v default storageclass" "standard-$ns \(default\) +example.com/none +Delete +Immediate +false" bash -c "$k apply -f - >/dev/null <<<'{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",\"metadata\":{\"name\":\"standard-$ns\",\"annotations\":{\"storageclass.kubernetes.io/is-default-class\":\"true\"}},\"provisioner\":\"example.com/none\"}' && $k get sc"
# kubectl 1.33 POSTs reviews and PUTs approvals as protobuf.
check "$v auth can-i" "^yes$" "$k" auth can-i create pods -n "$ns"
openssl req -new -newkey rsa:2048 -nodes -keyout "$data/csr-$v.key" -subj "/CN=bob" -out "$data/csr-$v.pem" 2>/dev/null
req=$(base64 -w0 <"$data/csr-$v.pem")
check "$v apply csr" "certificatesigningrequest.certificates.k8s.io/bob-$ns created" "$k" apply -f - <<<"{\"apiVersion\":\"certificates.k8s.io/v1\",\"kind\":\"CertificateSigningRequest\",\"metadata\":{\"name\":\"bob-$ns\"},\"spec\":{\"request\":\"$req\",\"signerName\":\"kubernetes.io/kube-apiserver-client\",\"usages\":[\"client auth\"]}}"
check "$v get csr pending" "bob-$ns +[0-9]+s +kubernetes.io/kube-apiserver-client +kubernetes-admin +<none> +Pending" "$k" get csr "bob-$ns"
check "$v certificate approve" "certificatesigningrequest.certificates.k8s.io/bob-$ns approved" "$k" certificate approve "bob-$ns"
check "$v get csr approved" "bob-$ns .*Approved" "$k" get csr "bob-$ns"
check "$v get componentstatuses" "embedded-store +Healthy +ok" "$k" get cs
pod="dbg-${v//./-}"
check "$v apply pod" "pod/$pod created" "$k" -n "$ns" apply -f - <<<"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$pod\"},\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"nginx\"}]}}"
check "$v debug adds an ephemeral container" "Defaulting debug container name to debugger-" "$k" -n "$ns" debug "$pod" --image=busybox
check "$v ephemeral container stored" "debugger-" "$k" -n "$ns" get pod "$pod" -o jsonpath='{.spec.ephemeralContainers[*].name}'

