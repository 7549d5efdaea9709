"""Checks of workloads and cluster objects: deployments with scale and status,
statefulsets, replicasets, jobs, delete propagation, pods and services,
networking, RBAC objects, leases, access reviews."""

import datetime
import json
import time

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from common import *  # noqa: F401,F403 — the clients, NS, check and builders


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

