"""What every check of the Python-client suite shares: the clients built from
KUBECONFIG, the suite namespace, the pass/fail counters and the `check`
decorator (which runs a check when its module is imported), and small
object builders.
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
