# Sourced by scripts/kubectl-suite inside its per-version loop ($k kubectl,
# $v its name, $ns the suite namespace): API aggregation as kubectl sees it —
# the local APIServices kapi registers for its own groups, and a remote one
# whose service does not exist.
check "$v get apiservices" "v1.apps +Local +True +[0-9]+" "$k" get apiservices
check "$v apiservice automanaged" "^onstart$" "$k" get apiservice v1.apps -o "jsonpath={.metadata.labels.kube-aggregator\.kubernetes\.io/automanaged}"
check "$v apply remote apiservice" "apiservice.apiregistration.k8s.io/v1.agg-${ns}.example.com created" "$k" apply -f - <<<"{\"apiVersion\":\"apiregistration.k8s.io/v1\",\"kind\":\"APIService\",\"metadata\":{\"name\":\"v1.agg-${ns}.example.com\"},\"spec\":{\"group\":\"agg-${ns}.example.com\",\"version\":\"v1\",\"groupPriorityMinimum\":1000,\"versionPriority\":15,\"insecureSkipTLSVerify\":true,\"service\":{\"namespace\":\"$ns\",\"name\":\"missing\",\"port\":443}}}"
check "$v remote apiservice unavailable" "v1.agg-${ns}.example.com +$ns/missing +False \(ServiceNotFound\)" sh -c "for i in \$(seq 50); do o=\$($k get apiservice v1.agg-${ns}.example.com 2>&1); case \$o in *ServiceNotFound*) echo \"\$o\"; exit;; esac; sleep 0.2; done; echo \"\$o\""
check "$v invalid apiservice" "must be \`spec.version\+\"\.\"\+spec.group\`" "$k" apply -f - <<<"{\"apiVersion\":\"apiregistration.k8s.io/v1\",\"kind\":\"APIService\",\"metadata\":{\"name\":\"v1.wrong-${ns}.example.com\"},\"spec\":{\"group\":\"agg-${ns}.example.com\",\"version\":\"v1\",\"groupPriorityMinimum\":1000,\"versionPriority\":15}}"
check "$v delete remote apiservice" "deleted" "$k" delete apiservice "v1.agg-${ns}.example.com"
