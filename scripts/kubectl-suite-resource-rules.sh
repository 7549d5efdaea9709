# Sourced by scripts/kubectl-suite inside its per-version loop ($k kubectl,
# $v its name, $ns the suite namespace): per-resource behaviour as upstream —
# service type changes and cluster IP immutability, probe and DNS validation,
# docker config secrets, pod-only hostPort defaulting and zero-valued statuses.
check "$v apply lb service" "service/lb3 created" "$k" -n "$ns" apply -f - <<<'{"apiVersion":"v1","kind":"Service","metadata":{"name":"lb3"},"spec":{"type":"LoadBalancer","ports":[{"name":"http","port":80}]}}'
check "$v service status" '^\{"loadBalancer":\{\}\}$' "$k" -n "$ns" get svc lb3 -o jsonpath='{.status}'
check "$v cluster ip immutable" 'spec.clusterIPs\[0\]: Invalid value: \[\]string\{"10.0.1.250"\}: may not change once set' "$k" -n "$ns" patch svc lb3 --type=merge -p '{"spec":{"clusterIP":"10.0.1.250"}}'
check "$v lb to clusterip drops node ports" "service/lb3 patched" "$k" -n "$ns" patch svc lb3 --type=merge -p '{"spec":{"type":"ClusterIP"}}'
check "$v clusterip has no node port" '^lb3 +ClusterIP +10\.[0-9.]+ +<none> +80/TCP ' "$k" -n "$ns" get svc lb3 --no-headers
check "$v to externalname drops cluster ip" '^lb3 +ExternalName +<none> +example.com ' sh -c "$k -n $ns patch svc lb3 --type=merge -p '{\"spec\":{\"type\":\"ExternalName\",\"externalName\":\"example.com\"}}' >/dev/null && $k -n $ns get svc lb3 --no-headers"
check "$v probe one handler" 'spec.containers\[0\].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type' "$k" -n "$ns" apply -f - <<<'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"probe3"},"spec":{"containers":[{"name":"c","image":"nginx","livenessProbe":{"exec":{"command":["true"]},"httpGet":{"port":80}}}]}}'
check "$v dns none needs config" 'spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None' "$k" -n "$ns" apply -f - <<<'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"dns3"},"spec":{"dnsPolicy":"None","containers":[{"name":"c","image":"nginx"}]}}'
check "$v dockerconfigjson is json" 'data\[.dockerconfigjson\]: Invalid value: "<secret contents redacted>": invalid character' "$k" -n "$ns" apply -f - <<<'{"apiVersion":"v1","kind":"Secret","metadata":{"name":"reg3"},"type":"kubernetes.io/dockerconfigjson","stringData":{".dockerconfigjson":"x"}}'
check "$v apply host network rs" "replicaset.apps/hn3 created" "$k" -n "$ns" apply -f - <<<'{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"hn3"},"spec":{"replicas":0,"selector":{"matchLabels":{"app":"hn3"}},"template":{"metadata":{"labels":{"app":"hn3"}},"spec":{"hostNetwork":true,"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":8080}]}]}}}}'
check "$v template keeps hostPort unset" '^8080:$' "$k" -n "$ns" get rs hn3 -o jsonpath='{.spec.template.spec.containers[0].ports[0].containerPort}:{.spec.template.spec.containers[0].ports[0].hostPort}'
check "$v rs zero status" '^\{"replicas":0\}$' "$k" -n "$ns" get rs hn3 -o jsonpath='{.status}'
