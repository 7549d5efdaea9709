# Sourced by scripts/kubectl-suite: the connect subresources through kapi to a
# fake kubelet (kapi-testkit's `fake-kubelet`: HTTPS with its own CA, checking
# kapi's kubelet client certificate; commands run as processes in its work
# directory). `connect_setup` runs before kapi starts (certificates, the
# kubelet, `kubelet_flags` for kapi's command line); `connect_node` once kapi
# is up; `connect_checks` inside the per-version loop ($k, $v, $ns).
# The node's address is loopback, which kubelet connections (logs, exec,
# attach, port-forward) accept and the proxy subresources refuse, as upstream.

connect_setup() { # data dir
  local d=$1/kubelet
  mkdir -p "$d/work"
  ( cd "$d" &&
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=kubelet-ca &&
    openssl req -newkey rsa:2048 -nodes -keyout kubelet.key -out kubelet.csr -subj /CN=fake-kubelet &&
    printf 'subjectAltName=IP:127.0.0.1\n' >kubelet.ext &&
    openssl x509 -req -in kubelet.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out kubelet.crt -days 2 -extfile kubelet.ext &&
    openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=kube-apiserver-kubelet-client &&
    printf 'extendedKeyUsage=clientAuth\n' >client.ext &&
    openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 2 -extfile client.ext
  ) >"$d/openssl.log" 2>&1 || { echo "connect: openssl failed"; cat "$d/openssl.log"; return 1; }
  kubelet_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "${CARGO_TARGET_DIR:-target}/debug/fake-kubelet" --listen "127.0.0.1:$kubelet_port" --cert "$d/kubelet.crt" \
    --key "$d/kubelet.key" --client-ca "$d/ca.crt" --workdir "$d/work" >"$d/kubelet.log" 2>&1 &
  kubelet_pid=$!
  kubelet_flags=(--kubelet-client-certificate "$d/client.crt" --kubelet-client-key "$d/client.key"
    --kubelet-certificate-authority "$d/ca.crt" --kubelet-preferred-address-types InternalIP --kubelet-timeout 3s)
}

connect_node() { # kubectl
  "$1" apply -f - >/dev/null <<<'{"apiVersion":"v1","kind":"Node","metadata":{"name":"kubelet-node"}}'
  "$1" patch node kubelet-node --subresource=status --type=merge -p "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"127.0.0.1\"}],\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":$kubelet_port}}}}" >/dev/null
}

connect_pod() { # kubectl, namespace, name, containers...
  local k=$1 ns=$2 name=$3; shift 3
  local cs="" c
  for c in "$@"; do cs="$cs${cs:+,}{\"name\":\"$c\",\"image\":\"busybox\",\"stdin\":true}"; done
  "$k" -n "$ns" apply -f - >/dev/null <<<"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$name\"},\"spec\":{\"nodeName\":\"kubelet-node\",\"containers\":[$cs]}}"
  "$k" -n "$ns" patch pod "$name" --subresource=status --type=merge -p '{"status":{"phase":"Running"}}' >/dev/null
}

forward_echo() { # kubectl, namespace, pod
  local lp out pf
  lp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$1" -n "$2" port-forward "pod/$3" "$lp:8080" >"$data/pf.log" 2>&1 &
  pf=$!
  out=$(python3 - "$lp" <<'PY'
import socket, sys, time
for _ in range(100):
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5); break
    except OSError:
        time.sleep(0.1)
s.sendall(b"ping-through-port-forward"); got = b""
while len(got) < 25:
    chunk = s.recv(64)
    if not chunk: break
    got += chunk
print(got.decode())
PY
)
  kill $pf 2>/dev/null; wait $pf 2>/dev/null
  echo "$out"; cat "$data/pf.log"
}

kubectl_proxy() { # kubectl, namespace: pods/log and pods/proxy through `kubectl proxy`
  local port kp out
  "$1" proxy --port=0 >"$data/kproxy.log" 2>&1 &
  kp=$!
  for _ in $(seq 100); do
    port=$(sed -n 's/.*Starting to serve on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$data/kproxy.log")
    [ -n "$port" ] && break; sleep 0.1
  done
  out=$(curl -s "http://127.0.0.1:$port/api/v1/namespaces/$2/pods/shell/log?tailLines=1"
        curl -s "http://127.0.0.1:$port/api/v1/namespaces/$2/pods/shell/proxy/")
  kill $kp 2>/dev/null; wait $kp 2>/dev/null
  echo "$out" | tr '\n' ' '
}

connect_checks() {
  connect_pod "$k" "$ns" shell app
  connect_pod "$k" "$ns" duo one two
  check "$v logs" "^app line 5$" "$k" -n "$ns" logs shell
  check "$v logs --tail" "^app line 5$" sh -c "$k -n $ns logs shell --tail=1 | wc -l | grep -q '^1$' && $k -n $ns logs shell --tail=1"
  check "$v logs --timestamps" "^2024-01-01T00:00:01Z app line 1$" "$k" -n "$ns" logs shell --timestamps
  check "$v logs -f" "app line 9" sh -c "timeout 10 $k -n $ns logs -f shell | head -9"
  check "$v logs choose container" "a container name must be specified for pod duo, choose one of: \[one two\]" "$k" get --raw "/api/v1/namespaces/$ns/pods/duo/log"
  check "$v logs -c" "^two line 1$" "$k" -n "$ns" logs duo -c two
  check "$v logs bad container" "container nope is not valid for pod shell" "$k" -n "$ns" logs shell -c nope
  check "$v exec" "^hello from exec$" "$k" -n "$ns" exec shell -- echo hello from exec
  check "$v exec stdin" "^piped through cat$" sh -c "echo piped through cat | $k -n $ns exec -i shell -- cat"
  check "$v exec exit code" "command terminated with exit code 3.*rc=3" sh -c "{ $k -n $ns exec shell -- sh -c 'exit 3' 2>&1; echo rc=\$?; } | tr '\n' ' '"
  check "$v exec tty" "tty-out" "$k" -n "$ns" exec -t shell -- echo tty-out
  check "$v exec stderr" "^to-stderr$" sh -c "$k -n $ns exec shell -- sh -c 'echo to-stderr >&2' 2>&1 >/dev/null"
  check "$v attach" "attached to app.*hi-attach" sh -c "echo hi-attach | $k -n $ns attach -i shell 2>&1 | tr '\n' ' '"
  printf 'copied %s\n' "$v" >"$data/cp-src-$v.txt"
  check "$v cp to pod" "^$" "$k" -n "$ns" cp "$data/cp-src-$v.txt" "shell:cp-$v.txt"
  check "$v cp landed" "^copied $v$" "$k" -n "$ns" exec shell -- cat "cp-$v.txt"
  check "$v cp from pod" "^copied $v$" sh -c "$k -n $ns cp shell:cp-$v.txt $data/cp-back-$v.txt >/dev/null 2>&1; cat $data/cp-back-$v.txt"
  check "$v port-forward" "^ping-through-port-forward$" forward_echo "$k" "$ns" shell
  check "$v nodes/proxy loopback refused" "address not allowed" "$k" get --raw /api/v1/nodes/kubelet-node/proxy/healthz
  check "$v pods/proxy loopback refused" "address not allowed" "$k" get --raw "/api/v1/namespaces/$ns/pods/shell/proxy/"
  check "$v kubectl proxy" "app line 5 .*address not allowed" kubectl_proxy "$k" "$ns"
  check "$v exec unscheduled" "does not have a host assigned" sh -c "$k -n $ns run idle --image=busybox --restart=Never >/dev/null; $k -n $ns exec idle -- true"
}
