"""Checks of the basics: version, namespaces, ConfigMap CRUD, the patch types,
server-side apply, errors, selectors and paging, watches."""

import datetime
import json
import time

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from common import *  # noqa: F401,F403 — the clients, NS, check and builders


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


