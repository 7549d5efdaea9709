"""The Python-client suite: drives a live kapi through the official `kubernetes`
client's typed APIs (which deserialize every response into strict models) and
checks results with plain asserts. Each check runs on its own; the run ends with
"N passed, M failed" and a non-zero exit on any failure.
Run by scripts/python-suite with KUBECONFIG pointing at the server's admin config.
"""

import datetime
import json
import sys
import time
import traceback

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

config.load_kube_config()
api = client.ApiClient()
core = client.CoreV1Api(api)
apps = client.AppsV1Api(api)
batch = client.BatchV1Api(api)
rbac = client.RbacAuthorizationV1Api(api)
net = client.NetworkingV1Api(api)
custom = client.CustomObjectsApi(api)
apiext = client.ApiextensionsV1Api(api)
coord = client.CoordinationV1Api(api)
authz = client.AuthorizationV1Api(api)

NS = "pysuite"
passed = 0
failed = 0


def check(fn):
    """Runs one named check; an exception or failed assert counts as a failure."""
    global passed, failed
    try:
        fn()
        passed += 1
    except Exception:  # noqa: BLE001 — every failure is reported, the run goes on
        failed += 1
        print(f"FAIL [{fn.__name__}]")
        print("    " + traceback.format_exc().replace("\n", "\n    "))
    return fn


def status_of(fn, *args, **kw):
    """Calls fn expecting an ApiException; returns (code, Status dict)."""
    try:
        fn(*args, **kw)
    except ApiException as e:
        return e.status, json.loads(e.body)
    raise AssertionError(f"{fn.__name__} did not fail")


def patch_cm(name, body, content_type, **query):
    """PATCH a ConfigMap with an explicit Content-Type. The 33.x typed patch
    methods pick JSON patch for lists and strategic merge for dicts, so merge
    patch and apply go through call_api, still deserialized into V1ConfigMap."""
    return api.call_api(
        "/api/v1/namespaces/{namespace}/configmaps/{name}",
        "PATCH",
        path_params={"namespace": NS, "name": name},
        query_params=list(query.items()),
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        response_type="V1ConfigMap",
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
    )


def meta(name, **kw):
    return client.V1ObjectMeta(name=name, **kw)


def cm(name, data, labels=None):
    return client.V1ConfigMap(metadata=meta(name, labels=labels), data=data)


def pod_spec(image="nginx"):
    return client.V1PodSpec(containers=[client.V1Container(name="c", image=image)])


def template(labels):
    return client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels=labels), spec=pod_spec())


@check
def version():
    v = client.VersionApi(api).get_code()
    assert v.major == "1" and v.git_version.startswith("v1."), v


@check
def namespaces():
    core.create_namespace(client.V1Namespace(metadata=meta(NS)))
    names = [n.metadata.name for n in core.list_namespace().items]
    assert "default" in names and NS in names, names
    ns = core.read_namespace(NS)
    assert ns.status.phase == "Active", ns.status
    assert ns.metadata.creation_timestamp.year >= 2024


@check
def configmap_crud():
    c = core.create_namespaced_config_map(NS, cm("a", {"k": "v"}, {"tier": "web"}))
    assert c.metadata.uid and c.metadata.resource_version
    r = core.read_namespaced_config_map("a", NS)
    assert r.data == {"k": "v"}
    r.data["k2"] = "v2"
    r2 = core.replace_namespaced_config_map("a", NS, r)
    assert r2.data == {"k": "v", "k2": "v2"}
    assert int(r2.metadata.resource_version) > int(c.metadata.resource_version)
    # Stale resourceVersion conflicts.
    r.data["k3"] = "x"
    code, st = status_of(core.replace_namespaced_config_map, "a", NS, r)
    assert code == 409 and st["reason"] == "Conflict", st


@check
def patches():
    # Strategic merge (the typed method's choice for a dict body).
    p = core.patch_namespaced_config_map("a", NS, {"data": {"s": "1"}})
    assert p.data["s"] == "1"
    # Merge patch by content type.
    p = patch_cm("a", {"data": {"m": "2", "s": None}}, "application/merge-patch+json")
    assert p.data.get("m") == "2" and "s" not in p.data, p.data
    # JSON patch (a list body).
    p = core.patch_namespaced_config_map("a", NS, [{"op": "add", "path": "/data/j", "value": "3"}])
    assert p.data["j"] == "3"
    # A failing JSON patch test op is 422.
    code, st = status_of(
        core.patch_namespaced_config_map, "a", NS, [{"op": "test", "path": "/data/j", "value": "nope"}]
    )
    assert code == 422 and st["kind"] == "Status", (code, st)


@check
def server_side_apply():
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"x": "1"}}
    r = patch_cm("applied", body, "application/apply-patch+yaml", fieldManager="pysuite")
    assert r.data == {"x": "1"}
    mf = r.metadata.managed_fields
    assert any(m.manager == "pysuite" and m.operation == "Apply" for m in mf), mf
    assert all(m.time is not None for m in mf)
    # A second manager's conflicting apply is a 409 Conflict.
    body2 = dict(body, data={"x": "2"})
    code, st = status_of(patch_cm, "applied", body2, "application/apply-patch+yaml", fieldManager="other")
    assert code == 409 and st["reason"] == "Conflict", st
    r = patch_cm("applied", body2, "application/apply-patch+yaml", fieldManager="other", force="true")
    assert r.data == {"x": "2"}
    # Apply without fieldManager is a 422 (the client's typed model is not involved).
    code, st = status_of(patch_cm, "applied", body2, "application/apply-patch+yaml")
    assert code == 422, (code, st)


@check
def errors():
    code, st = status_of(core.read_namespaced_config_map, "missing", NS)
    assert code == 404 and st["reason"] == "NotFound", st
    assert st["details"]["name"] == "missing" and st["details"]["kind"] == "configmaps", st
    code, st = status_of(core.create_namespaced_config_map, NS, cm("a", {}))
    assert code == 409 and st["reason"] == "AlreadyExists", st
    code, st = status_of(core.create_namespaced_config_map, NS, cm("Bad_Name", {}))
    assert code == 422 and st["reason"] == "Invalid", st
    assert st["details"]["causes"], st


@check
def selectors_and_paging():
    for i in range(5):
        core.create_namespaced_config_map(NS, cm(f"page-{i}", {"i": str(i)}, {"group": "paging", "n": str(i)}))
    l = core.list_namespaced_config_map(NS, label_selector="group=paging")
    assert len(l.items) == 5, [i.metadata.name for i in l.items]
    l = core.list_namespaced_config_map(NS, label_selector="group=paging,n in (1,2)")
    assert sorted(i.metadata.name for i in l.items) == ["page-1", "page-2"]
    l = core.list_namespaced_config_map(NS, field_selector="metadata.name=page-3")
    assert [i.metadata.name for i in l.items] == ["page-3"]
    seen, cont = [], None
    while True:
        l = core.list_namespaced_config_map(NS, label_selector="group=paging", limit=2, _continue=cont)
        assert len(l.items) <= 2
        seen += [i.metadata.name for i in l.items]
        cont = l.metadata._continue
        if not cont:
            break
        assert l.metadata.remaining_item_count is None or l.metadata.remaining_item_count > 0
    assert seen == [f"page-{i}" for i in range(5)], seen
    rv = core.list_namespaced_config_map(NS).metadata.resource_version
    l = core.list_namespaced_config_map(NS, resource_version=rv, resource_version_match="NotOlderThan")
    assert len(l.items) >= 5
    l = core.list_namespaced_config_map(NS, resource_version="0")
    assert len(l.items) >= 5
    code, st = status_of(core.list_namespaced_config_map, NS, field_selector="data.i=1")
    assert code == 400 and st["reason"] == "BadRequest", st


@check
def watches():
    rv = core.list_namespaced_config_map(NS).metadata.resource_version
    core.create_namespaced_config_map(NS, cm("watched", {"a": "1"}))
    core.patch_namespaced_config_map("watched", NS, {"data": {"a": "2"}})
    core.delete_namespaced_config_map("watched", NS)
    w = watch.Watch()
    events = []
    for ev in w.stream(
        core.list_namespaced_config_map,
        NS,
        resource_version=rv,
        field_selector="metadata.name=watched",
        timeout_seconds=3,
    ):
        events.append((ev["type"], ev["object"].data))
        if len(events) == 3:
            w.stop()
    assert [e[0] for e in events] == ["ADDED", "MODIFIED", "DELETED"], events
    assert isinstance(ev["object"], client.V1ConfigMap)
    # A watch with a server-side timeout ends by itself with no events.
    start = time.monotonic()
    quiet = list(
        watch.Watch().stream(core.list_namespaced_config_map, NS, label_selector="none=here", timeout_seconds=1)
    )
    assert quiet == [] and time.monotonic() - start < 30, quiet
    # Bookmarks are accepted.
    got = list(
        watch.Watch().stream(
            core.list_namespaced_config_map, NS, allow_watch_bookmarks=True, resource_version=rv, timeout_seconds=1
        )
    )
    assert all(e["type"] in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK") for e in got), got


@check
def deployment_scale_status():
    d = client.V1Deployment(
        metadata=meta("web", labels={"app": "web"}),
        spec=client.V1DeploymentSpec(
            replicas=2, selector=client.V1LabelSelector(match_labels={"app": "web"}), template=template({"app": "web"})
        ),
    )
    d = apps.create_namespaced_deployment(NS, d)
    assert d.spec.strategy.type == "RollingUpdate" and d.spec.revision_history_limit == 10, d.spec
    s = apps.read_namespaced_deployment_scale("web", NS)
    assert s.spec.replicas == 2 and s.status.selector == "app=web", s
    s.spec.replicas = 3
    s = apps.replace_namespaced_deployment_scale("web", NS, s)
    assert s.spec.replicas == 3
    s = apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": 4}})
    assert s.spec.replicas == 4
    assert apps.read_namespaced_deployment("web", NS).spec.replicas == 4
    st = apps.read_namespaced_deployment_status("web", NS)
    st.status = client.V1DeploymentStatus(replicas=4, ready_replicas=1, observed_generation=1)
    st = apps.replace_namespaced_deployment_status("web", NS, st)
    assert st.status.ready_replicas == 1
    st = apps.patch_namespaced_deployment_status("web", NS, {"status": {"availableReplicas": 1}})
    assert st.status.available_replicas == 1
    assert st.spec.replicas == 4


@check
def statefulset_replicaset():
    apps.create_namespaced_stateful_set(
        NS,
        client.V1StatefulSet(
            metadata=meta("db"),
            spec=client.V1StatefulSetSpec(
                service_name="db", selector=client.V1LabelSelector(match_labels={"app": "db"}), template=template({"app": "db"})
            ),
        ),
    )
    s = apps.read_namespaced_stateful_set_scale("db", NS)
    assert s.spec.replicas == 1
    apps.create_namespaced_replica_set(
        NS,
        client.V1ReplicaSet(
            metadata=meta("rs"),
            spec=client.V1ReplicaSetSpec(
                selector=client.V1LabelSelector(match_labels={"app": "rs"}), template=template({"app": "rs"})
            ),
        ),
    )
    apps.create_namespaced_daemon_set(
        NS,
        client.V1DaemonSet(
            metadata=meta("ds"),
            spec=client.V1DaemonSetSpec(
                selector=client.V1LabelSelector(match_labels={"app": "ds"}), template=template({"app": "ds"})
            ),
        ),
    )
    assert apps.read_namespaced_daemon_set("ds", NS).spec.update_strategy.type == "RollingUpdate"


@check
def jobs():
    j = client.V1Job(
        metadata=meta("job"),
        spec=client.V1JobSpec(
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(restart_policy="Never", containers=[client.V1Container(name="c", image="busybox")])
            )
        ),
    )
    j = batch.create_namespaced_job(NS, j)
    assert j.spec.backoff_limit == 6 and j.spec.completions == 1, j.spec
    assert j.spec.selector.match_labels, j.spec.selector
    st = batch.read_namespaced_job_status("job", NS)
    assert st.metadata.name == "job"
    cj = client.V1CronJob(
        metadata=meta("cron"),
        spec=client.V1CronJobSpec(
            schedule="*/5 * * * *",
            job_template=client.V1JobTemplateSpec(
                spec=client.V1JobSpec(
                    template=client.V1PodTemplateSpec(
                        spec=client.V1PodSpec(
                            restart_policy="OnFailure", containers=[client.V1Container(name="c", image="busybox")]
                        )
                    )
                )
            ),
        ),
    )
    cj = batch.create_namespaced_cron_job(NS, cj)
    assert cj.spec.concurrency_policy == "Allow" and cj.spec.suspend is False, cj.spec
    code, st = status_of(
        batch.create_namespaced_cron_job, NS, client.V1CronJob(metadata=meta("badcron"), spec=dict(cj.to_dict()["spec"], schedule="nope"))
    )
    assert code == 422 and st["reason"] == "Invalid", st


@check
def delete_propagation():
    for policy in ("Foreground", "Background", "Orphan"):
        name = f"prop-{policy.lower()}"
        apps.create_namespaced_deployment(
            NS,
            client.V1Deployment(
                metadata=meta(name),
                spec=client.V1DeploymentSpec(
                    selector=client.V1LabelSelector(match_labels={"app": name}), template=template({"app": name})
                ),
            ),
        )
        r = apps.delete_namespaced_deployment(name, NS, propagation_policy=policy)
        assert r is not None
    # Foreground returns the object while its finalizer runs; the rest go away.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        left = [d.metadata.name for d in apps.list_namespaced_deployment(NS).items if d.metadata.name.startswith("prop-")]
        if not left:
            break
        time.sleep(0.3)
    assert not left, left
    # Delete with preconditions.
    c = core.create_namespaced_config_map(NS, cm("precond", {}))
    code, st = status_of(
        core.delete_namespaced_config_map,
        "precond",
        NS,
        body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="wrong")),
    )
    assert code == 409 and st["reason"] == "Conflict", st
    r = core.delete_namespaced_config_map(
        "precond", NS, body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=c.metadata.uid))
    )
    assert r.status == "Success" or r.kind == "Status", r
    # deletecollection
    core.delete_collection_namespaced_config_map(NS, label_selector="group=paging")
    assert core.list_namespaced_config_map(NS, label_selector="group=paging").items == []


@check
def pods_and_services():
    p = core.create_namespaced_pod(NS, client.V1Pod(metadata=meta("p", labels={"app": "p"}), spec=pod_spec()))
    assert p.spec.restart_policy == "Always" and p.spec.dns_policy == "ClusterFirst", p.spec
    assert p.status.phase == "Pending", p.status
    p = core.patch_namespaced_pod_status(
        "p", NS, {"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}
    )
    assert p.status.conditions[0].last_transition_time.year == 2025
    s = core.create_namespaced_service(
        NS,
        client.V1Service(
            metadata=meta("svc"),
            spec=client.V1ServiceSpec(selector={"app": "p"}, ports=[client.V1ServicePort(port=80, target_port=8080)]),
        ),
    )
    assert s.spec.cluster_ip and s.spec.type == "ClusterIP" and s.spec.ports[0].protocol == "TCP", s.spec
    core.create_namespaced_endpoints(
        NS,
        client.V1Endpoints(
            metadata=meta("svc"),
            subsets=[client.V1EndpointSubset(addresses=[client.V1EndpointAddress(ip="10.0.0.1")], ports=[client.CoreV1EndpointPort(port=8080)])],
        ),
    )
    core.create_namespaced_secret(NS, client.V1Secret(metadata=meta("sec"), string_data={"a": "b"}))
    sec = core.read_namespaced_secret("sec", NS)
    assert sec.data == {"a": "Yg=="} and sec.type == "Opaque", sec
    core.create_namespaced_service_account(NS, client.V1ServiceAccount(metadata=meta("sa")))
    core.create_namespaced_persistent_volume_claim(
        NS,
        client.V1PersistentVolumeClaim(
            metadata=meta("pvc"),
            spec=client.V1PersistentVolumeClaimSpec(
                access_modes=["ReadWriteOnce"], resources=client.V1VolumeResourceRequirements(requests={"storage": "1Gi"})
            ),
        ),
    )
    core.create_namespaced_resource_quota(
        NS, client.V1ResourceQuota(metadata=meta("q"), spec=client.V1ResourceQuotaSpec(hard={"pods": "10"}))
    )
    core.create_namespaced_limit_range(
        NS,
        client.V1LimitRange(
            metadata=meta("lr"),
            spec=client.V1LimitRangeSpec(limits=[client.V1LimitRangeItem(type="Container", default={"cpu": "100m"})]),
        ),
    )
    core.create_namespaced_pod_template(NS, client.V1PodTemplate(metadata=meta("pt"), template=template({"a": "b"})))
    core.create_namespaced_replication_controller(
        NS,
        client.V1ReplicationController(
            metadata=meta("rc"), spec=client.V1ReplicationControllerSpec(selector={"app": "rc"}, template=template({"app": "rc"}))
        ),
    )
    s = core.read_namespaced_replication_controller_scale("rc", NS)
    assert s.spec.replicas == 1
    core.create_namespaced_event(
        NS,
        client.CoreV1Event(
            metadata=meta("ev"),
            involved_object=client.V1ObjectReference(kind="Pod", name="p", namespace=NS),
            reason="Test",
            message="hello",
            type="Normal",
            # events.k8s.io/v1's model requires eventTime (upstream serves null
            # for core Events without one, which the Python client rejects).
            event_time=datetime.datetime.now(datetime.timezone.utc),
            reporting_component="pysuite",
            reporting_instance="pysuite-1",
            action="Testing",
        ),
    )
    core.create_node(client.V1Node(metadata=meta("node-py")))
    core.create_persistent_volume(
        client.V1PersistentVolume(
            metadata=meta("pv-py"),
            spec=client.V1PersistentVolumeSpec(
                capacity={"storage": "1Gi"}, access_modes=["ReadWriteOnce"], host_path=client.V1HostPathVolumeSource(path="/tmp")
            ),
        )
    )


@check
def networking():
    ing = client.V1Ingress(
        metadata=meta("ing"),
        spec=client.V1IngressSpec(
            rules=[
                client.V1IngressRule(
                    host="example.com",
                    http=client.V1HTTPIngressRuleValue(
                        paths=[
                            client.V1HTTPIngressPath(
                                path="/",
                                path_type="Prefix",
                                backend=client.V1IngressBackend(
                                    service=client.V1IngressServiceBackend(name="svc", port=client.V1ServiceBackendPort(number=80))
                                ),
                            )
                        ]
                    ),
                )
            ]
        ),
    )
    ing = net.create_namespaced_ingress(NS, ing)
    assert ing.spec.rules[0].http.paths[0].backend.service.port.number == 80
    st = net.read_namespaced_ingress_status("ing", NS)
    assert st.metadata.name == "ing"
    net.create_namespaced_network_policy(
        NS, client.V1NetworkPolicy(metadata=meta("np"), spec=client.V1NetworkPolicySpec(pod_selector=client.V1LabelSelector()))
    )
    net.create_ingress_class(client.V1IngressClass(metadata=meta("ic-py"), spec=client.V1IngressClassSpec(controller="x.io/c")))


@check
def rbac_objects():
    rbac.create_namespaced_role(
        NS,
        client.V1Role(metadata=meta("r"), rules=[client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get"])]),
    )
    rbac.create_namespaced_role_binding(
        NS,
        client.V1RoleBinding(
            metadata=meta("rb"),
            role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="r"),
            subjects=[client.RbacV1Subject(kind="User", name="bob", api_group="rbac.authorization.k8s.io")],
        ),
    )
    roles = rbac.list_cluster_role().items
    assert any(r.metadata.name == "cluster-admin" for r in roles)
    rbac.list_cluster_role_binding()
    rbac.list_role_for_all_namespaces()
    rbac.list_role_binding_for_all_namespaces()


@check
def leases():
    now = "2025-01-02T03:04:05.123456Z"
    l = coord.create_namespaced_lease(
        NS,
        client.V1Lease(
            metadata=meta("leader"),
            spec={"holderIdentity": "me", "leaseDurationSeconds": 15, "renewTime": now, "acquireTime": now},
        ),
    )
    assert l.spec.holder_identity == "me" and l.spec.renew_time.microsecond == 123456, l.spec
    l.spec.holder_identity = "you"
    l = coord.replace_namespaced_lease("leader", NS, l)
    assert l.spec.holder_identity == "you"


@check
def access_review():
    r = authz.create_self_subject_access_review(
        client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(namespace=NS, verb="create", resource="pods")
            )
        )
    )
    assert r.status.allowed is True, r.status
    r = authz.create_self_subject_rules_review(client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace=NS)))
    assert r.status.resource_rules, r.status


CRD_GROUP = "py.example.com"


@check
def crds():
    crd = client.V1CustomResourceDefinition(
        metadata=meta(f"widgets.{CRD_GROUP}"),
        spec=client.V1CustomResourceDefinitionSpec(
            group=CRD_GROUP,
            scope="Namespaced",
            names=client.V1CustomResourceDefinitionNames(plural="widgets", singular="widget", kind="Widget", short_names=["wg"]),
            versions=[
                client.V1CustomResourceDefinitionVersion(
                    name="v1",
                    served=True,
                    storage=True,
                    schema=client.V1CustomResourceValidation(
                        open_apiv3_schema=client.V1JSONSchemaProps(
                            type="object",
                            properties={
                                "spec": client.V1JSONSchemaProps(
                                    type="object",
                                    properties={
                                        "size": client.V1JSONSchemaProps(type="integer", minimum=1),
                                        "replicas": client.V1JSONSchemaProps(type="integer"),
                                    },
                                ),
                                "status": client.V1JSONSchemaProps(
                                    type="object", properties={"replicas": client.V1JSONSchemaProps(type="integer")}
                                ),
                            },
                        )
                    ),
                    subresources=client.V1CustomResourceSubresources(
                        status={},
                        scale=client.V1CustomResourceSubresourceScale(
                            spec_replicas_path=".spec.replicas", status_replicas_path=".status.replicas"
                        ),
                    ),
                )
            ],
        ),
    )
    apiext.create_custom_resource_definition(crd)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        c = apiext.read_custom_resource_definition(f"widgets.{CRD_GROUP}")
        conds = {x.type: x.status for x in (c.status.conditions or [])}
        if conds.get("Established") == "True":
            break
        time.sleep(0.2)
    assert conds.get("Established") == "True", c.status
    assert any(x.metadata.name == f"widgets.{CRD_GROUP}" for x in apiext.list_custom_resource_definition().items)
    # Discovery can lag the Established condition a little.
    deadline = time.monotonic() + 10
    while True:
        try:
            custom.list_namespaced_custom_object(CRD_GROUP, "v1", NS, "widgets")
            break
        except ApiException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    w = {"apiVersion": f"{CRD_GROUP}/v1", "kind": "Widget", "metadata": {"name": "w1", "labels": {"a": "b"}}, "spec": {"size": 2, "replicas": 1}}
    w = custom.create_namespaced_custom_object(CRD_GROUP, "v1", NS, "widgets", w)
    assert w["metadata"]["uid"] and w["spec"]["size"] == 2
    g = custom.get_namespaced_custom_object(CRD_GROUP, "v1", NS, "widgets", "w1")
    g["spec"]["size"] = 3
    g = custom.replace_namespaced_custom_object(CRD_GROUP, "v1", NS, "widgets", "w1", g)
    assert g["spec"]["size"] == 3
    g = custom.patch_namespaced_custom_object(CRD_GROUP, "v1", NS, "widgets", "w1", {"spec": {"size": 4}})
    assert g["spec"]["size"] == 4
    l = custom.list_namespaced_custom_object(CRD_GROUP, "v1", NS, "widgets", label_selector="a=b")
    assert [i["metadata"]["name"] for i in l["items"]] == ["w1"] and l["kind"] == "WidgetList", l
    l = custom.list_cluster_custom_object(CRD_GROUP, "v1", "widgets")
    assert len(l["items"]) == 1
    s = custom.patch_namespaced_custom_object_status(CRD_GROUP, "v1", NS, "widgets", "w1", {"status": {"replicas": 1}})
    assert s["status"]["replicas"] == 1
    sc = custom.get_namespaced_custom_object_scale(CRD_GROUP, "v1", NS, "widgets", "w1")
    assert sc["spec"]["replicas"] == 1 and sc["status"]["replicas"] == 1, sc
    sc = custom.patch_namespaced_custom_object_scale(CRD_GROUP, "v1", NS, "widgets", "w1", {"spec": {"replicas": 5}})
    assert custom.get_namespaced_custom_object(CRD_GROUP, "v1", NS, "widgets", "w1")["spec"]["replicas"] == 5
    code, st = status_of(
        custom.create_namespaced_custom_object,
        CRD_GROUP,
        "v1",
        NS,
        "widgets",
        {"apiVersion": f"{CRD_GROUP}/v1", "kind": "Widget", "metadata": {"name": "bad"}, "spec": {"size": 0}},
    )
    assert code == 422 and st["reason"] == "Invalid", st
    code, st = status_of(custom.get_namespaced_custom_object, CRD_GROUP, "v1", NS, "widgets", "nope")
    assert code == 404 and st["reason"] == "NotFound", st
    custom.delete_namespaced_custom_object(CRD_GROUP, "v1", NS, "widgets", "w1")


@check
def all_namespaces_lists():
    for fn in (
        core.list_config_map_for_all_namespaces,
        core.list_pod_for_all_namespaces,
        core.list_service_for_all_namespaces,
        core.list_secret_for_all_namespaces,
        core.list_service_account_for_all_namespaces,
        core.list_event_for_all_namespaces,
        core.list_endpoints_for_all_namespaces,
        apps.list_deployment_for_all_namespaces,
        batch.list_job_for_all_namespaces,
        net.list_ingress_for_all_namespaces,
        coord.list_lease_for_all_namespaces,
    ):
        l = fn()
        assert isinstance(l.items, list), fn.__name__
    names = [c.metadata.name for c in core.list_config_map_for_all_namespaces().items]
    assert "kube-root-ca.crt" in names and "a" in names, names


def every_list_call():
    """Every list_* of every typed API group the client ships, once each."""
    apis = [c for n, c in vars(client).items() if n.endswith("Api") and isinstance(c, type)]
    skip = {"CustomObjectsApi", "VersionApi", "WellKnownApi", "LogsApi", "OpenidApi", "CoreApi"}
    calls = []
    for cls in apis:
        if cls.__name__ in skip or not any(cls.__name__.endswith(s) for s in ("V1Api", "V2Api")):
            continue
        inst = cls(api)
        for name in sorted(dir(inst)):
            if not name.startswith("list_") or name.endswith("_with_http_info"):
                continue
            calls.append((cls.__name__, name, getattr(inst, name)))
    return calls


@check
def every_builtin_list_deserializes():
    bad, done = [], 0
    for cls, name, fn in every_list_call():
        try:
            fn(NS) if "namespaced" in name else fn()
            done += 1
        except ApiException as e:
            if e.status == 404:  # a group/version the server does not serve (e.g. alpha/beta)
                continue
            bad.append(f"{cls}.{name}: {e.status} {e.body[:200]}")
        except Exception as e:  # noqa: BLE001 — a model the client could not build
            bad.append(f"{cls}.{name}: {type(e).__name__}: {e}")
    assert done > 40, done
    assert not bad, "\n".join(bad)


@check
def dynamic_client_and_utils():
    from kubernetes import dynamic, utils

    dyn = dynamic.DynamicClient(client.ApiClient())
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    obj = cms.create(namespace=NS, body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn"}, "data": {"a": "1"}})
    assert obj.metadata.uid
    got = cms.get(namespace=NS, name="dyn")
    assert got.data.a == "1"
    assert any(i.metadata.name == "dyn" for i in cms.get(namespace=NS).items)
    deps = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    assert deps.namespaced and "scale" in deps.subresources, deps.subresources
    widgets = dyn.resources.get(api_version=f"{CRD_GROUP}/v1", kind="Widget")
    assert widgets.namespaced
    cms.delete(namespace=NS, name="dyn")
    utils.create_from_dict(
        client.ApiClient(),
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "from-dict"},
            "spec": {
                "selector": {"matchLabels": {"app": "fd"}},
                "template": {"metadata": {"labels": {"app": "fd"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
            },
        },
        namespace=NS,
    )
    assert apps.read_namespaced_deployment("from-dict", NS).spec.replicas == 1


@check
def cleanup_namespace():
    core.delete_namespace(NS)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            core.read_namespace(NS)
        except ApiException as e:
            assert e.status == 404
            return
        time.sleep(0.3)
    raise AssertionError("namespace not deleted")


print(f"python suite: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
