"""Checks across the API: custom resources, lists in all namespaces, every list
call and every built-in kind deserialized, the dynamic client and utils, then
the suite namespace deleted (last)."""

import datetime
import json
import time

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from common import *  # noqa: F401,F403 — the clients, NS, check and builders


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

