//! The one table of `kapi serve`'s flags: every flag kube-apiserver 1.33
//! accepts (visible, and the deprecated ones it still takes), then kapi's own.
//!
//! 1.33 removed the cloud provider flags (`--cloud-provider`, `--cloud-config`,
//! kubernetes PR 130162), so its help has no "Cloud provider flags" group.
//!
//! One row per flag, `|`-separated:
//! `name|shorthand|type|default|section|status|deprecation|help`.
//!
//! - `type` is the pflag value type (`bool`, `int`, `strings`, `duration`, …),
//!   which decides the value syntax ([`super::value`]).
//! - `default` is kapi's effective default, written as the flag would be given.
//! - `section` is upstream's help group ([`Section`]); `kapi` holds kapi's own flags.
//! - `status` says what kapi does with the flag: `on` — implemented (read into
//!   `ServeArgs` and used); `noop` — accepted, has no meaning in kapi (named in
//!   the log once when given); `todo` — accepted, not implemented yet (named in
//!   the log once when given). Wiring a flag later is this one word plus the
//!   behaviour.
//! - `deprecation`, when not empty, is printed when the flag is used, as pflag does.
//!
//! Invariants (checked by the unit tests): names are unique, every row parses,
//! and every default is a valid value of its type.

/// Upstream's help groups, in the order `--help` prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    Generic,
    Etcd,
    SecureServing,
    Auditing,
    Features,
    Authentication,
    Authorization,
    ApiEnablement,
    EgressSelector,
    Admission,
    Metrics,
    Logs,
    Traces,
    Misc,
    Kapi,
    Global,
}

impl Section {
    pub const ALL: [Section; 16] = [
        Section::Generic,
        Section::Etcd,
        Section::SecureServing,
        Section::Auditing,
        Section::Features,
        Section::Authentication,
        Section::Authorization,
        Section::ApiEnablement,
        Section::EgressSelector,
        Section::Admission,
        Section::Metrics,
        Section::Logs,
        Section::Traces,
        Section::Misc,
        Section::Kapi,
        Section::Global,
    ];

    fn key(self) -> &'static str {
        match self {
            Section::Generic => "generic",
            Section::Etcd => "etcd",
            Section::SecureServing => "secure",
            Section::Auditing => "audit",
            Section::Features => "features",
            Section::Authentication => "authn",
            Section::Authorization => "authz",
            Section::ApiEnablement => "api",
            Section::EgressSelector => "egress",
            Section::Admission => "admission",
            Section::Metrics => "metrics",
            Section::Logs => "logs",
            Section::Traces => "traces",
            Section::Misc => "misc",
            Section::Kapi => "kapi",
            Section::Global => "global",
        }
    }

    /// The heading `--help` prints.
    pub fn title(self) -> &'static str {
        match self {
            Section::Generic => "Generic flags",
            Section::Etcd => "Etcd flags",
            Section::SecureServing => "Secure serving flags",
            Section::Auditing => "Auditing flags",
            Section::Features => "Features flags",
            Section::Authentication => "Authentication flags",
            Section::Authorization => "Authorization flags",
            Section::ApiEnablement => "API enablement flags",
            Section::EgressSelector => "Egress selector flags",
            Section::Admission => "Admission flags",
            Section::Metrics => "Metrics flags",
            Section::Logs => "Logs flags",
            Section::Traces => "Traces flags",
            Section::Misc => "Misc flags",
            Section::Kapi => "kapi flags (not in kube-apiserver)",
            Section::Global => "Global flags",
        }
    }
}

/// What kapi does with a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Implemented,
    NoEffect,
    NotYet,
}

/// One parsed row of [`TABLE`].
#[derive(Debug, Clone)]
pub struct Spec {
    pub name: &'static str,
    pub short: Option<char>,
    pub ty: &'static str,
    pub default: &'static str,
    pub section: Section,
    pub status: Status,
    pub deprecated: Option<&'static str>,
    pub help: &'static str,
}

/// All flags, parsed once.
pub fn specs() -> &'static [Spec] {
    static SPECS: std::sync::OnceLock<Vec<Spec>> = std::sync::OnceLock::new();
    SPECS.get_or_init(|| {
        TABLE
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| parse_row(l).unwrap_or_else(|e| panic!("flag table row {l:?}: {e}")))
            .collect()
    })
}

/// The row of `name`.
pub fn lookup(name: &str) -> Option<&'static Spec> {
    specs().iter().find(|s| s.name == name)
}

/// The row whose shorthand is `c`.
pub fn lookup_short(c: char) -> Option<&'static Spec> {
    specs().iter().find(|s| s.short == Some(c))
}

fn parse_row(line: &'static str) -> Result<Spec, String> {
    let cols: Vec<&'static str> = line.splitn(8, '|').collect();
    let [name, short, ty, default, section, status, deprecated, help] = cols[..] else {
        return Err(format!("{} columns, want 8", cols.len()));
    };
    let short = match short {
        "" => None,
        s if s.chars().count() == 1 => s.chars().next(),
        s => return Err(format!("shorthand {s:?}")),
    };
    let section = Section::ALL
        .into_iter()
        .find(|s| s.key() == section)
        .ok_or_else(|| format!("section {section:?}"))?;
    let status = match status {
        "on" => Status::Implemented,
        "noop" => Status::NoEffect,
        "todo" => Status::NotYet,
        s => return Err(format!("status {s:?}")),
    };
    let deprecated = (!deprecated.is_empty()).then_some(deprecated);
    Ok(Spec {
        name,
        short,
        ty,
        default,
        section,
        status,
        deprecated,
        help,
    })
}

/// name|shorthand|type|default|section|status|deprecation|help
const TABLE: &str = r#"
# Generic flags
advertise-address||ip||generic|on||The address written into the admin kubeconfig and discovery and given to the default/kubernetes endpoints (kapi default: 127.0.0.1).
cors-allowed-origins||strings||generic|on||Origins (regular expressions) allowed to make cross-origin requests; empty turns CORS off.
default-not-ready-toleration-seconds||int|300|generic|on||tolerationSeconds of the not-ready NoExecute toleration added to pods that have none.
default-unreachable-toleration-seconds||int|300|generic|on||tolerationSeconds of the unreachable NoExecute toleration added to pods that have none.
enable-priority-and-fairness||bool|true|generic|on||Classify and queue requests by FlowSchemas and PriorityLevelConfigurations instead of the plain in-flight limits.
external-hostname||string||generic|on||Host name used in externally visible URLs (the service account issuer discovery document's jwks_uri); default: the advertise address.
feature-gates||colonSeparatedMultimapStringString||generic|on||Feature gates as [kube:]Name=true|false pairs, comma-separated, repeatable; every 1.33 gate is known (unknown ones and locked ones set otherwise are refused). kapi acts on AggregatedDiscoveryRemoveBetaType, ConsistentListFromCache and WatchList; the others change nothing here.
goaway-chance||float|0|generic|on||Fraction (0 to .02) of HTTP/2 requests answered with GOAWAY so clients spread over several servers.
livez-grace-period||duration|0s|generic|noop||How long after start /livez reports unfinished start-up hooks as healthy (kapi serves only once its start-up hooks have run, so /livez never sees an unfinished one).
max-mutating-requests-inflight||int|200|generic|on||Mutating requests in flight at most (0: no limit); with priority and fairness, part of the total concurrency.
max-requests-inflight||int|400|generic|on||Non-mutating requests in flight at most (0: no limit); with priority and fairness, part of the total concurrency.
min-request-timeout||int|1800|generic|on||Least number of seconds a watch is kept open; each watch picks a random timeout above it.
request-timeout||duration|1m0s|generic|on||How long a request that is not long-running may take before it is answered 504.
shutdown-delay-duration||duration|0s|generic|on||On termination keep serving this long (readyz failing) before shutting down.
shutdown-send-retry-after||bool|false|generic|on||While draining at shutdown, answer new requests 429 with Retry-After and close the connection.
shutdown-watch-termination-grace-period||duration|0s|generic|on||At shutdown, the longest wait for open watches to end.
strict-transport-security-directives||strings||generic|on||HSTS directives to send, e.g. max-age=31536000,includeSubDomains; empty sends none.
# Etcd flags
default-watch-cache-size||int|100|etcd|noop|watch caches are sized automatically and this flag will be removed in a future version|Watch cache size of resources without their own setting.
delete-collection-workers||int|1|etcd|on||Workers a DeleteCollection call uses.
enable-garbage-collector||bool|true|etcd|on||Garbage collection: deletes honour propagationPolicy with the collector's finalizers, and kapi runs its garbage collector (false: neither; keep in step with kube-controller-manager's flag).
encryption-provider-config||string||etcd|on||EncryptionConfiguration file: how each resource is encrypted at rest (aescbc, aesgcm, secretbox, KMS v2, identity).
encryption-provider-config-automatic-reload||bool|false|etcd|on||Reload --encryption-provider-config when the file changes (checked every minute); KMS health is then one check, kms-providers.
etcd-cafile||string||etcd|on||CA certificate that signs etcd's serving certificate.
etcd-certfile||string||etcd|on||Client certificate for etcd.
etcd-compaction-interval||duration|5m0s|etcd|on||How often old revisions are compacted; 0 turns compaction off.
etcd-count-metric-poll-period||duration|1m0s|etcd|on||How often object counts per resource are refreshed for the metrics; 0 turns it off.
etcd-db-metric-poll-interval||duration|30s|etcd|on||How often each storage member is asked for its database size (apiserver_storage_db_total_size_in_bytes, shown with --show-hidden-metrics-for-version); 0 turns it off.
etcd-healthcheck-timeout||duration|2s|etcd|on||Timeout of the storage health check.
etcd-keyfile||string||etcd|on||Key of --etcd-certfile.
etcd-prefix||string|/registry|etcd|on||Key prefix of every object in etcd.
etcd-readycheck-timeout||duration|2s|etcd|on||Timeout of the storage readiness check.
etcd-servers||strings||etcd|on||etcd URLs (comma-separated); without them kapi uses its embedded store under --data-dir.
etcd-servers-overrides||strings||etcd|on||Other etcd servers for some resources: group/resource#url;url, comma-separated.
lease-reuse-duration-seconds||int|60|etcd|on||Seconds one etcd lease is reused for objects with a TTL.
storage-backend||string||etcd|noop||Storage backend; only etcd3 exists (kapi chooses by --etcd-servers).
storage-initialization-timeout||duration|1m0s|etcd|on||How long the storage-readiness start-up hook waits for the watch caches to be filled (with the WatchCacheInitializationPostStartHook gate).
storage-media-type||string|application/vnd.kubernetes.protobuf|etcd|on||Encoding of stored objects.
watch-cache||bool|true|etcd|on||Serve lists and watches from the in-memory watch cache.
watch-cache-sizes||strings||etcd|on||Per-resource watch cache settings resource[.group]#size; 0 turns the cache off for that resource.
# Secure serving flags
bind-address||ip|0.0.0.0|secure|on||Address to listen on for HTTPS.
cert-dir||string|/var/run/kubernetes|secure|on||Where apiserver.crt/apiserver.key are read from, or written to when missing (ignored with --tls-cert-file). Without the flag, kapi serve keeps its certificates under --data-dir/pki.
disable-http2-serving||bool|false|secure|on||Serve HTTP/1.1 only.
http2-max-streams-per-connection||int|0|secure|on||Concurrent HTTP/2 streams a client may open per connection (0: upstream's default, 100).
permit-address-sharing||bool|false|secure|on||Bind with SO_REUSEADDR (set on every listener, as Go does on Linux).
permit-port-sharing||bool|false|secure|on||Bind with SO_REUSEPORT so several servers share the port.
secure-port||int|6443|secure|on||Port to serve HTTPS on (kapi also takes 0: a free port).
tls-cert-file||string||secure|on||Serving certificate (PEM, chain after the leaf); without it one is generated (see --cert-dir).
tls-cipher-suites||strings||secure|on||TLS 1.2 cipher suites the server allows (IANA names; TLS 1.3 suites are not configurable, as in Go; CBC, RC4, 3DES and RSA key exchange suites are accepted but not offered); empty keeps the defaults.
tls-min-version||string||secure|on||Lowest TLS version: VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13 (kapi speaks TLS 1.2 and 1.3 only, so the first two mean 1.2).
tls-private-key-file||string||secure|on||Key of --tls-cert-file.
tls-sni-cert-key||namedCertKey||secure|on||Certificate and key served for some host names: cert,key[:name,...]; repeatable.
# Auditing flags
audit-log-batch-buffer-size||int|10000|audit|on||Audit events buffered before new ones are dropped (and counted).
audit-log-batch-max-size||int|1|audit|on||Audit events written per batch at most (batch mode).
audit-log-batch-max-wait||duration|0s|audit|on||Longest wait before a batch that is not full is written.
audit-log-batch-throttle-burst||int|0|audit|on||Batches written at once when the throttle allows a burst.
audit-log-batch-throttle-enable||bool|false|audit|on||Throttle batch writes.
audit-log-batch-throttle-qps||float32|0|audit|on||Batches written per second on average.
audit-log-compress||bool|false|audit|on||Gzip rotated audit logs.
audit-log-format||string|json|audit|on||Audit log format: json, or legacy (one line of text per event).
audit-log-maxage||int|0|audit|on||Days rotated audit logs are kept (0: no limit).
audit-log-maxbackup||int|0|audit|on||Rotated audit logs kept (0: all).
audit-log-maxsize||int|0|audit|on||Megabytes before the audit log rotates (0: kapi's 100).
audit-log-mode||string|blocking|audit|on||How events reach the log: batch (buffered, written off the request path), blocking, or blocking-strict (a request whose RequestReceived event cannot be written fails).
audit-log-path||string||audit|on||File audit events are written to as JSON lines; - is standard output.
audit-log-truncate-enabled||bool|false|audit|on||Truncate large events and split large batches.
audit-log-truncate-max-batch-size||int|10485760|audit|on||Largest batch in bytes before it is split.
audit-log-truncate-max-event-size||int|102400|audit|on||Largest event in bytes; larger ones lose request and response, then are dropped.
audit-log-version||string|audit.k8s.io/v1|audit|on||API version the audit log is written in.
audit-policy-file||string||audit|on||Audit policy (audit.k8s.io Policy); without it nothing is audited.
audit-webhook-batch-buffer-size||int|10000|audit|on||Webhook audit events buffered before new ones are dropped.
audit-webhook-batch-max-size||int|400|audit|on||Webhook audit events sent per batch at most.
audit-webhook-batch-max-wait||duration|30s|audit|on||Longest wait before a batch that is not full is sent.
audit-webhook-batch-throttle-burst||int|15|audit|on||Batches sent at once when the throttle allows a burst.
audit-webhook-batch-throttle-enable||bool|true|audit|on||Throttle batch sends.
audit-webhook-batch-throttle-qps||float32|10|audit|on||Batches sent per second on average.
audit-webhook-config-file||string||audit|on||Kubeconfig naming the audit webhook.
audit-webhook-initial-backoff||duration|10s|audit|on||Wait before the first retry of a failed send.
audit-webhook-mode||string|batch|audit|on||How events reach the webhook: batch, blocking or blocking-strict.
audit-webhook-truncate-enabled||bool|false|audit|on||Truncate large events and split large batches.
audit-webhook-truncate-max-batch-size||int|10485760|audit|on||Largest batch in bytes before it is split.
audit-webhook-truncate-max-event-size||int|102400|audit|on||Largest event in bytes.
audit-webhook-version||string|audit.k8s.io/v1|audit|on||API version events are sent to the webhook in.
# Features flags
contention-profiling||bool|false|features|noop||Block profiling (a Go runtime facility).
debug-socket-path||string||features|noop||Unix socket for Go profiling without authentication.
profiling||bool|true|features|noop||Go profiling at /debug/pprof.
# Authentication flags
anonymous-auth||bool|true|authn|on||Let requests without credentials in as system:anonymous (group system:unauthenticated).
api-audiences||strings||authn|on||Audiences service account tokens must carry (default: the first --service-account-issuer).
authentication-config||string||authn|on||Structured authentication configuration file (JWT authenticators, anonymous settings).
authentication-token-webhook-cache-ttl||duration|2m0s|authn|on||How long webhook token reviews are cached.
authentication-token-webhook-config-file||string||authn|on||Kubeconfig of a TokenReview webhook for bearer tokens.
authentication-token-webhook-version||string|v1beta1|authn|on||TokenReview version sent to the webhook.
client-ca-file||string||authn|on||Trust client certificates signed by these CAs (CN is the user, O the groups), besides kapi's own CA.
enable-bootstrap-token-auth||bool|false|authn|on||Accept bootstrap tokens (kube-system Secrets of type bootstrap.kubernetes.io/token).
oidc-ca-file||string||authn|on||CA of the OpenID Connect issuer.
oidc-client-id||string||authn|on||OpenID Connect client ID tokens must be issued for.
oidc-groups-claim||string||authn|on||Token claim holding the user's groups.
oidc-groups-prefix||string||authn|on||Prefix added to OIDC group names.
oidc-issuer-url||string||authn|on||OpenID Connect issuer (https) whose ID tokens are accepted.
oidc-required-claim||mapStringString||authn|on||Claims (key=value) an ID token must carry; repeatable.
oidc-signing-algs||strings|RS256|authn|on||Signature algorithms accepted on ID tokens.
oidc-username-claim||string|sub|authn|on||Token claim holding the user name.
oidc-username-prefix||string||authn|on||Prefix added to OIDC user names (- for none).
requestheader-allowed-names||strings||authn|on||Common names a front-proxy client certificate may have (empty: any).
requestheader-client-ca-file||string||authn|on||CA of front-proxy client certificates; requests with one may name the user in headers.
requestheader-extra-headers-prefix||strings||authn|on||Header prefixes carrying extra user information (X-Remote-Extra- is common).
requestheader-group-headers||strings||authn|on||Headers naming the groups (X-Remote-Group is common).
requestheader-uid-headers||strings||authn|on||Headers naming the user's UID (X-Remote-Uid is common).
requestheader-username-headers||strings||authn|on||Headers naming the user (X-Remote-User is common).
service-account-extend-token-expiration||bool|true|authn|on||Pod-bound tokens asking for the kubelet's default lifetime live a year and carry a warnafter claim.
service-account-issuer||stringArray||authn|on||Issuer of service account tokens; the first signs, all are accepted. Repeatable.
service-account-jwks-uri||string||authn|on||Key set URL in the issuer discovery document (default: https://<advertise address>/openid/v1/jwks).
service-account-key-file||stringArray||authn|on||PEM keys or certificates that verify service account tokens; repeatable.
service-account-lookup||bool|true|authn|on||Check that a legacy token's Secret and service account still exist (bound tokens are always checked).
service-account-max-token-expiration||duration|0s|authn|on||Longest TokenRequest lifetime granted; longer requests are shortened (0: no cap).
token-auth-file||string||authn|on||Static bearer tokens, CSV: token,user,uid,"group1,group2".
# Authorization flags
authorization-config||string||authz|on||Structured authorization configuration file (authorizer chain with webhooks).
authorization-mode||strings|RBAC|authz|on||Authorizers in order: Node, RBAC, ABAC, Webhook, AlwaysAllow, AlwaysDeny. kapi's default is RBAC, upstream's AlwaysAllow.
authorization-policy-file||string||authz|on||ABAC policy file (JSON lines).
authorization-webhook-cache-authorized-ttl||duration|5m0s|authz|on||How long allowed webhook answers are cached.
authorization-webhook-cache-unauthorized-ttl||duration|30s|authz|on||How long denied webhook answers are cached.
authorization-webhook-config-file||string||authz|on||Kubeconfig of a SubjectAccessReview webhook (--authorization-mode=Webhook).
authorization-webhook-version||string|v1beta1|authz|on||SubjectAccessReview version sent to the webhook.
# API enablement flags
runtime-config||mapStringString||api|on||Turn API groups, versions or resources on and off: api/all, api/ga, api/beta, api/alpha, v1, group/version, group/version/resource = true|false (discovery, OpenAPI and routes follow; kapi serves every version it has by default).
# Egress selector flags
egress-selector-config-file||string||egress|on||File with apiserver egress selector configuration (EgressSelectorConfiguration): how the server reaches the cluster (kubelets, proxies, extension servers, webhook services) and the control plane (authentication, authorization and audit webhooks, webhook URLs) and etcd; Direct, HTTPConnect (TCP, TLS or a unix socket) or GRPC (konnectivity, a unix socket).
# Admission flags
admission-control||strings||admission|on|use --enable-admission-plugins or --disable-admission-plugins instead|The complete list of admission plugins (replaces the default set; not with --enable-/--disable-admission-plugins).
admission-control-config-file||string||admission|on||AdmissionConfiguration file with per-plugin settings (PodSecurity defaults and exemptions, ResourceQuota limited resources; other plugins' settings are named in the log and ignored).
disable-admission-plugins||strings||admission|on||Admission plugins to turn off, even default ones (order does not matter).
enable-admission-plugins||strings||admission|on||Admission plugins to turn on besides the defaults (order does not matter; plugins kapi lacks are named in the log and skipped).
# Metrics flags
allow-metric-labels||stringToString||metrics|on||Allowed values of metric labels: <metric>,<label>='v1,v2'.
allow-metric-labels-manifest||string||metrics|on||File with the same mapping as --allow-metric-labels.
disabled-metrics||strings||metrics|on||Metrics (full names) not to serve.
show-hidden-metrics-for-version||string||metrics|on||Previous minor version (1.32): the metrics hidden for being deprecated are shown again.
# Logs flags
log-flush-frequency||duration|5s|logs|noop||Longest time between log flushes (kapi writes each line at once).
log-json-info-buffer-size||quantity|0|logs|noop||With JSON split streams, bytes of info messages buffered.
log-json-split-stream||bool|false|logs|noop||With JSON, errors to stderr and info to stdout.
log-text-info-buffer-size||quantity|0|logs|noop||With text split streams, bytes of info messages buffered.
log-text-split-stream||bool|false|logs|noop||With text, errors to stderr and info to stdout.
logging-format||string|text|logs|on||Log format: text or json (one JSON object per line).
v|v|Level|0|logs|on||Log verbosity: 0-1 info, 2-4 debug, 5 and up trace (RUST_LOG is used when the flag is absent).
vmodule||pattern=N,...||logs|noop||Per-file verbosity (pattern=N, comma-separated).
# Traces flags
tracing-config-file||string||traces|on||TracingConfiguration file (APIServerTracing): spans of every request sent over OTLP/gRPC to its endpoint (default localhost:4317), samplingRatePerMillion of them (default 0: only requests carrying a trusted sampled trace context).
# Misc flags
aggregator-reject-forwarding-redirect||bool|true|misc|on||Do not pass redirects from extension API servers back to the client.
allow-privileged||bool|false|misc|on||Allow pod specs with privileged containers (without it they are refused 422, as upstream).
apiserver-count||int|1|misc|noop|apiserver-count is deprecated and will be removed in a future version|Number of API servers (only for the master-count endpoint reconciler).
coordinated-leadership-lease-duration||duration|15s|misc|todo||Lease duration of coordinated leader election.
coordinated-leadership-renew-deadline||duration|10s|misc|todo||Renew deadline of coordinated leader election.
coordinated-leadership-retry-period||duration|2s|misc|todo||Retry period of coordinated leader election.
emulated-version||strings||misc|on||Versions components emulate, [component=]major.minor (kube up to 1.33).
emulation-forward-compatible||bool|false|misc|on||With an emulated version, also turn on newer versions of the beta APIs it has.
enable-aggregator-routing||bool|false|misc|on||Dial the services of APIServices and webhooks at a ready endpoint instead of their cluster IP (needed without kube-proxy on this host).
enable-logs-handler||bool|false|misc|noop|Log handler functionality is deprecated|Serve the server's log directory at /logs.
endpoint-reconciler-type||string|lease|misc|on||Who keeps default/kubernetes endpoints: lease, none (master-count works as lease).
event-ttl||duration|1h0m0s|misc|on||How long events are kept.
kubelet-certificate-authority||string||misc|on||CA of kubelet serving certificates.
kubelet-client-certificate||string||misc|on||Client certificate for kubelet connections.
kubelet-client-key||string||misc|on||Key of --kubelet-client-certificate.
kubelet-port||uint|10250|misc|noop|kubelet-port is deprecated and will be removed.|Kubelet port.
kubelet-preferred-address-types||strings|Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP|misc|on||Node address types tried, in order, to reach kubelets.
kubelet-read-only-port||uint|10255|misc|noop|kubelet-read-only-port is deprecated and will be removed.|Kubelet read-only port.
kubelet-timeout||duration|5s|misc|on||Timeout of kubelet calls.
kubernetes-service-node-port||int|0|misc|on||Make the kubernetes service a NodePort service on this port (0: ClusterIP).
max-connection-bytes-per-sec||int|0|misc|on||Throttle each direction of upgraded connections to nodes, pods and services (exec, attach, port-forward, proxy) to this many bytes a second (0: off).
peer-advertise-ip||string||misc|todo||IP other API servers use to proxy requests here (version skew).
peer-advertise-port||string||misc|todo||Port other API servers use to proxy requests here (version skew).
peer-ca-file||string||misc|todo||CA of other API servers' serving certificates.
proxy-client-cert-file||string||misc|on||Client certificate presented to extension API servers and webhooks.
proxy-client-key-file||string||misc|on||Key of --proxy-client-cert-file.
runtime-config-emulation-forward-compatible||bool|false|misc|on||Install --runtime-config APIs newer than the emulated version.
service-account-signing-endpoint||string||misc|on||Unix socket (a path, or @name) of an external service account token signer (ExternalServiceAccountTokenSigner gate); excludes the key file flags.
service-account-signing-key-file||string||misc|on||Key that signs service account tokens (generated as sa.key under --data-dir when absent).
service-cluster-ip-range||string|10.0.0.0/24|misc|on||CIDR service cluster IPs come from.
service-node-port-range||portRange|30000-32767|misc|on||Ports NodePort services may use, N1-N2 inclusive.
# kapi's own flags
controllers||strings|*|kapi|on||In-process controllers, as kube-controller-manager's flag: * all on by default, foo on, -foo off (garbagecollector, namespace, serviceaccount, serviceaccount-token, root-ca-cert-publisher, clusterrole-aggregation, resourcequota; off by default: bootstrapsigner, tokencleaner).
data-dir||string|./kapi-data|kapi|on||Where the embedded store, kapi's CA and certificates and the admin kubeconfig live (as kube-apiserver: <cert-dir>/kapi-data).
service-account-legacy-tokens||bool|false|kapi|on||Accept legacy secret-based service account tokens.
storage-ready-timeout||duration|1m0s|kapi|on||Give up when storage is not reachable within this time.
# Global flags
help|h|bool|false|global|on||Print this help.
version||version|false|global|on||Print the version (--version, --version=raw) and quit.
"#;
