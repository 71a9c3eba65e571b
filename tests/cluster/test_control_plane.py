"""The local control plane behaves like the real thing where the service depends on it.

Every test runs in its own namespace against real etcd, kube-apiserver, controller
manager, scheduler, kwok and the agent-sandbox controller. Waiting is done by watching
(list, then watch from that resourceVersion) with a deadline, never by sleeping.
"""

from __future__ import annotations

import ipaddress
import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from testenv import build
from testenv.cluster.instance import EXTENSIONS_GROUP, POD_CIDR, SANDBOX_GROUP

pytestmark = pytest.mark.cluster

T = TypeVar("T")
GROUP, EXT_GROUP, VERSION = SANDBOX_GROUP, EXTENSIONS_GROUP, "v1beta1"
POD_NETWORK = ipaddress.ip_network(POD_CIDR)
IMAGE = "busybox:1.36"


# --- waiting ---------------------------------------------------------------------------


def wait_for(
    api: Any,
    list_fn: Callable[..., Any],
    *args: Any,
    until: Callable[[dict[str, dict[str, Any]]], T | None],
    what: str,
    timeout: float = 30.0,
    **selectors: Any,
) -> T:
    """Watch a collection until ``until(objects by name)`` returns something not None.

    ``list_fn(*args, **selectors)`` is any list call of the client (typed or custom
    objects); objects are handled as plain dicts with the API's camelCase keys.
    """

    def as_dict(obj: Any) -> Any:
        return obj if isinstance(obj, dict) else api.sanitize_for_serialization(obj)

    deadline = time.monotonic() + timeout
    objects: dict[str, dict[str, Any]] = {}
    while True:
        listing = as_dict(list_fn(*args, **selectors))
        objects = {o["metadata"]["name"]: o for o in listing["items"]}
        result = until(objects)
        if result is not None:
            return result
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        stream = watch.Watch()
        try:
            for event in stream.stream(
                list_fn,
                *args,
                resource_version=listing["metadata"]["resourceVersion"],
                timeout_seconds=int(remaining) + 1,
                **selectors,
            ):
                obj = as_dict(event["object"])
                if event["type"] == "DELETED":
                    objects.pop(obj["metadata"]["name"], None)
                elif event["type"] in ("ADDED", "MODIFIED"):
                    objects[obj["metadata"]["name"]] = obj
                else:
                    continue
                result = until(objects)
                if result is not None:
                    stream.stop()
                    return result
                if time.monotonic() > deadline:
                    stream.stop()
        except ApiException as exc:
            if exc.status != 410:  # 410 Gone: relist
                raise
        if time.monotonic() > deadline:
            break
    seen = json.dumps(objects, default=str)[:3000]
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last seen: {seen}")


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in obj.get("status", {}).get("conditions") or []:
        if cond["type"] == kind:
            return dict(cond)
    return None


def is_ready(obj: dict[str, Any]) -> bool:
    cond = condition(obj, "Ready")
    return cond is not None and cond["status"] == "True"


def gone(name: str) -> Callable[[dict[str, dict[str, Any]]], bool | None]:
    return lambda objects: True if name not in objects else None


# --- object helpers --------------------------------------------------------------------


def read(api: Any, fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
    """Call a read/list API function and return the object as a plain dict."""
    result = fn(*args)
    return dict(result if isinstance(result, dict) else api.sanitize_for_serialization(result))


def pod_template(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels or {"app": "cp-test"}},
        "spec": {"containers": [{"name": "main", "image": IMAGE, "command": ["sleep", "1d"]}]},
    }


def create_template(
    custom: client.CustomObjectsApi,
    namespace: str,
    name: str,
    volume_claims: list[dict[str, Any]] | None = None,
) -> None:
    spec: dict[str, Any] = {"podTemplate": pod_template(), "networkPolicyManagement": "Unmanaged"}
    if volume_claims:
        spec["volumeClaimTemplates"] = volume_claims
    custom.create_namespaced_custom_object(
        EXT_GROUP,
        VERSION,
        namespace,
        "sandboxtemplates",
        {
            "apiVersion": f"{EXT_GROUP}/{VERSION}",
            "kind": "SandboxTemplate",
            "metadata": {"name": name},
            "spec": spec,
        },
    )


def create_pool(custom: client.CustomObjectsApi, namespace: str, name: str, replicas: int) -> None:
    custom.create_namespaced_custom_object(
        EXT_GROUP,
        VERSION,
        namespace,
        "sandboxwarmpools",
        {
            "apiVersion": f"{EXT_GROUP}/{VERSION}",
            "kind": "SandboxWarmPool",
            "metadata": {"name": name},
            "spec": {"replicas": replicas, "sandboxTemplateRef": {"name": name}},
        },
    )


def wait_pool_ready(api: Any, namespace: str, name: str, replicas: int) -> dict[str, Any]:
    custom = client.CustomObjectsApi(api)

    def ready(objects: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        status = objects.get(name, {}).get("status", {})
        if status.get("readyReplicas") == replicas and status.get("replicas") == replicas:
            return objects[name]
        return None

    return wait_for(
        api,
        custom.list_namespaced_custom_object,
        EXT_GROUP,
        VERSION,
        namespace,
        "sandboxwarmpools",
        until=ready,
        what=f"warm pool {name} to report {replicas} ready",
        timeout=60,
    )


def pvc_body(name: str, modes: list[str], size: str = "1Gi", sc: str | None = None) -> Any:
    spec: dict[str, Any] = {"accessModes": modes, "resources": {"requests": {"storage": size}}}
    if sc is not None:
        spec["storageClassName"] = sc
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": spec,
    }


# --- tests -----------------------------------------------------------------------------


def test_version_is_the_pinned_release(kube_api: Any) -> None:
    info = read(kube_api, client.VersionApi(kube_api).get_code)
    assert info["gitVersion"] == "v1.36.3"
    assert (info["major"], info["minor"]) == ("1", "36")
    assert info["gitTreeState"] == "clean"


def test_nodes_are_kwok_nodes_with_loopback_addresses(kube_api: Any) -> None:
    nodes = read(kube_api, client.CoreV1Api(kube_api).list_node)["items"]
    assert sorted(n["metadata"]["name"] for n in nodes) == ["kwok-node-1", "kwok-node-2"]
    for node in nodes:
        name = node["metadata"]["name"]
        index = name.rsplit("-", 1)[1]
        assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
        assert node["spec"]["podCIDR"] == f"127.1.{index}.0/24"
        assert "taints" not in node["spec"]
        addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
        assert addresses == {"InternalIP": f"127.0.10.{index}", "Hostname": name}
        assert is_ready(node)


def test_sandbox_becomes_ready(kube_api: Any, kube_namespace: str) -> None:
    custom = client.CustomObjectsApi(kube_api)
    core = client.CoreV1Api(kube_api)
    custom.create_namespaced_custom_object(
        GROUP,
        VERSION,
        kube_namespace,
        "sandboxes",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Sandbox",
            "metadata": {"name": "box"},
            "spec": {"podTemplate": pod_template({"app": "box"})},
        },
    )
    sandbox = wait_for(
        kube_api,
        custom.list_namespaced_custom_object,
        GROUP,
        VERSION,
        kube_namespace,
        "sandboxes",
        until=lambda objs: objs["box"] if "box" in objs and is_ready(objs["box"]) else None,
        what="Sandbox box to become Ready",
    )
    ready = condition(sandbox, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("True", "DependenciesReady")

    pod = read(kube_api, core.read_namespaced_pod, "box", kube_namespace)
    assert pod["status"]["phase"] == "Running"
    assert is_ready(pod)
    assert pod["metadata"]["labels"]["app"] == "box"
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Sandbox", "box", True)
    assert pod["spec"]["nodeName"] in ("kwok-node-1", "kwok-node-2")
    assert ipaddress.ip_address(pod["status"]["podIP"]) in POD_NETWORK
    assert sandbox["status"]["podIPs"] == [pod["status"]["podIP"]]
    assert sandbox["status"]["nodeName"] == pod["spec"]["nodeName"]
    assert sandbox["status"]["selector"].startswith("agents.x-k8s.io/sandbox-name-hash=")


def test_warm_pool_reports_two_ready(kube_api: Any, kube_namespace: str) -> None:
    custom = client.CustomObjectsApi(kube_api)
    create_template(custom, kube_namespace, "pool")
    create_pool(custom, kube_namespace, "pool", 2)
    pool = wait_pool_ready(kube_api, kube_namespace, "pool", 2)
    assert pool["status"]["readyReplicas"] == 2

    sandboxes = read(
        kube_api, custom.list_namespaced_custom_object, GROUP, VERSION, kube_namespace, "sandboxes"
    )["items"]
    assert len(sandboxes) == 2
    for sandbox in sandboxes:
        assert sandbox["metadata"]["name"].startswith("pool-")
        assert is_ready(sandbox)


def test_claim_adopts_warm_sandbox_and_labels_its_pod(kube_api: Any, kube_namespace: str) -> None:
    custom = client.CustomObjectsApi(kube_api)
    core = client.CoreV1Api(kube_api)
    create_template(custom, kube_namespace, "warm")
    create_pool(custom, kube_namespace, "warm", 2)
    wait_pool_ready(kube_api, kube_namespace, "warm", 2)
    warm = {
        s["metadata"]["name"]
        for s in read(
            kube_api,
            custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            kube_namespace,
            "sandboxes",
        )["items"]
    }
    pod_uids = {
        name: read(kube_api, core.read_namespaced_pod, name, kube_namespace)["metadata"]["uid"]
        for name in warm
    }

    custom.create_namespaced_custom_object(
        EXT_GROUP,
        VERSION,
        kube_namespace,
        "sandboxclaims",
        {
            "apiVersion": f"{EXT_GROUP}/{VERSION}",
            "kind": "SandboxClaim",
            "metadata": {"name": "claim"},
            "spec": {
                "warmPoolRef": {"name": "warm"},
                "additionalPodMetadata": {"labels": {"context.rossoctl.io/pool": "warm"}},
            },
        },
    )
    claim = wait_for(
        kube_api,
        custom.list_namespaced_custom_object,
        EXT_GROUP,
        VERSION,
        kube_namespace,
        "sandboxclaims",
        until=lambda objs: (
            objs["claim"]
            if "claim" in objs
            and is_ready(objs["claim"])
            and objs["claim"]["status"].get("sandbox", {}).get("name")
            else None
        ),
        what="SandboxClaim claim to become Ready",
    )
    sandbox_name = claim["status"]["sandbox"]["name"]
    assert sandbox_name in warm, "the claim cold-started instead of adopting a warm sandbox"
    pod = wait_for(
        kube_api,
        core.list_namespaced_pod,
        kube_namespace,
        until=lambda objs: (
            objs[sandbox_name]
            if (objs.get(sandbox_name, {}).get("metadata", {}).get("labels") or {}).get(
                "context.rossoctl.io/pool"
            )
            == "warm"
            else None
        ),
        what=f"pod {sandbox_name} to carry the claim's label",
    )
    assert pod["metadata"]["uid"] == pod_uids[sandbox_name], "the pod was replaced, not relabelled"
    assert pod["status"]["phase"] == "Running"
    assert claim["status"]["sandbox"]["podIPs"] == [pod["status"]["podIP"]]


def test_deleting_claim_collects_sandbox_pod_and_pvcs(kube_api: Any, kube_namespace: str) -> None:
    custom = client.CustomObjectsApi(kube_api)
    core = client.CoreV1Api(kube_api)
    workspace = {
        "metadata": {"name": "workspace"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    create_template(custom, kube_namespace, "vol", volume_claims=[workspace])
    create_pool(custom, kube_namespace, "vol", 1)
    wait_pool_ready(kube_api, kube_namespace, "vol", 1)
    custom.create_namespaced_custom_object(
        EXT_GROUP,
        VERSION,
        kube_namespace,
        "sandboxclaims",
        {
            "apiVersion": f"{EXT_GROUP}/{VERSION}",
            "kind": "SandboxClaim",
            "metadata": {"name": "claim"},
            "spec": {"warmPoolRef": {"name": "vol"}},
        },
    )
    claim = wait_for(
        kube_api,
        custom.list_namespaced_custom_object,
        EXT_GROUP,
        VERSION,
        kube_namespace,
        "sandboxclaims",
        until=lambda objs: objs["claim"] if "claim" in objs and is_ready(objs["claim"]) else None,
        what="SandboxClaim claim to become Ready",
    )
    sandbox_name = claim["status"]["sandbox"]["name"]
    pvc_name = f"workspace-{sandbox_name}"
    pvc = read(kube_api, core.read_namespaced_persistent_volume_claim, pvc_name, kube_namespace)
    assert pvc["status"]["phase"] == "Bound"
    assert pvc["spec"]["storageClassName"] == "standard"
    assert pvc["metadata"]["ownerReferences"][0]["name"] == sandbox_name
    volume_name = pvc["spec"]["volumeName"]
    pod = read(kube_api, core.read_namespaced_pod, sandbox_name, kube_namespace)
    assert pod["status"]["phase"] == "Running"
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["workspace"]["persistentVolumeClaim"]["claimName"] == pvc_name

    custom.delete_namespaced_custom_object(
        EXT_GROUP,
        VERSION,
        kube_namespace,
        "sandboxclaims",
        "claim",
        body=client.V1DeleteOptions(propagation_policy="Foreground"),
    )
    for what, list_fn, args, name in (
        (
            "claim",
            custom.list_namespaced_custom_object,
            (EXT_GROUP, VERSION, kube_namespace, "sandboxclaims"),
            "claim",
        ),
        (
            "sandbox",
            custom.list_namespaced_custom_object,
            (GROUP, VERSION, kube_namespace, "sandboxes"),
            sandbox_name,
        ),
        ("pod", core.list_namespaced_pod, (kube_namespace,), sandbox_name),
        ("pvc", core.list_namespaced_persistent_volume_claim, (kube_namespace,), pvc_name),
    ):
        wait_for(kube_api, list_fn, *args, until=gone(name), what=f"{what} {name} to be deleted")
    # The released volume goes too (reclaim policy Delete, done by the fake provisioner).
    wait_for(
        kube_api,
        core.list_persistent_volume,
        until=gone(volume_name),
        what=f"PV {volume_name} to be deleted",
    )


@pytest.mark.parametrize(
    ("modes", "storage_class"),
    [
        (["ReadWriteOnce"], None),  # the default class
        (["ReadWriteMany"], "standard"),
        (["ReadWriteOnce", "ReadWriteMany"], "standard-fixed"),
    ],
)
def test_pvc_binds(
    kube_api: Any, kube_namespace: str, modes: list[str], storage_class: str | None
) -> None:
    core = client.CoreV1Api(kube_api)
    core.create_namespaced_persistent_volume_claim(
        kube_namespace, pvc_body("data", modes, "3Gi", storage_class)
    )
    pvc = wait_for(
        kube_api,
        core.list_namespaced_persistent_volume_claim,
        kube_namespace,
        until=lambda objs: (
            objs["data"] if objs.get("data", {}).get("status", {}).get("phase") == "Bound" else None
        ),
        what="PVC data to be Bound",
    )
    assert pvc["spec"]["storageClassName"] == (storage_class or "standard")
    assert pvc["status"]["accessModes"] == modes
    assert pvc["status"]["capacity"] == {"storage": "3Gi"}
    pv = read(kube_api, core.read_persistent_volume, pvc["spec"]["volumeName"])
    assert pv["status"]["phase"] == "Bound"
    assert pv["spec"]["accessModes"] == modes
    assert pv["spec"]["capacity"] == {"storage": "3Gi"}
    assert pv["spec"]["storageClassName"] == (storage_class or "standard")
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    claim_ref = pv["spec"]["claimRef"]
    assert (claim_ref["namespace"], claim_ref["name"]) == (kube_namespace, "data")
    assert claim_ref["uid"] == pvc["metadata"]["uid"]


def test_pvc_expansion_follows_the_class(kube_api: Any, kube_namespace: str) -> None:
    core = client.CoreV1Api(kube_api)
    for name, storage_class in (("grow", "standard"), ("fixed", "standard-fixed")):
        core.create_namespaced_persistent_volume_claim(
            kube_namespace, pvc_body(name, ["ReadWriteOnce"], "1Gi", storage_class)
        )
    wait_for(
        kube_api,
        core.list_namespaced_persistent_volume_claim,
        kube_namespace,
        until=lambda objs: (
            True
            if all(
                objs.get(n, {}).get("status", {}).get("phase") == "Bound" for n in ("grow", "fixed")
            )
            else None
        ),
        what="both PVCs to be Bound",
    )
    bigger = {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}
    core.patch_namespaced_persistent_volume_claim("grow", kube_namespace, bigger)
    pvc = wait_for(
        kube_api,
        core.list_namespaced_persistent_volume_claim,
        kube_namespace,
        until=lambda objs: (
            objs["grow"] if objs["grow"]["status"].get("capacity") == {"storage": "2Gi"} else None
        ),
        what="PVC grow to report 2Gi",
    )
    pv = read(kube_api, core.read_persistent_volume, pvc["spec"]["volumeName"])
    assert pv["spec"]["capacity"] == {"storage": "2Gi"}

    with pytest.raises(ApiException) as refused:
        core.patch_namespaced_persistent_volume_claim("fixed", kube_namespace, bigger)
    assert refused.value.status == 403
    assert (
        "storageclass that provisions the pvc must support resize"
        in json.loads(str(refused.value.body))["message"]
    )


def test_schema_violation_is_rejected_by_the_api_server(kube_api: Any, kube_namespace: str) -> None:
    custom = client.CustomObjectsApi(kube_api)
    with pytest.raises(ApiException) as rejected:
        custom.create_namespaced_custom_object(
            GROUP,
            VERSION,
            kube_namespace,
            "sandboxes",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "Sandbox",
                "metadata": {"name": "bad"},
                "spec": {"podTemplate": pod_template(), "operatingMode": "Sideways"},
            },
        )
    assert rejected.value.status == 422
    body = json.loads(str(rejected.value.body))
    assert (body["code"], body["reason"]) == (422, "Invalid")
    assert body["message"].startswith(
        'Sandbox.agents.x-k8s.io "bad" is invalid: [spec.operatingMode: Unsupported value: '
        '"Sideways": supported values: "Running", "Suspended"'
    )
    # The CRD's CEL rules are skipped once the schema fails; the API server says so in a
    # second cause.
    assert body["details"]["causes"][0] == {
        "reason": "FieldValueNotSupported",
        "message": 'Unsupported value: "Sideways": supported values: "Running", "Suspended"',
        "field": "spec.operatingMode",
    }
    assert [c["reason"] for c in body["details"]["causes"]] == [
        "FieldValueNotSupported",
        "FieldValueInvalid",
    ]
    # Nothing was stored.
    sandboxes = read(
        kube_api, custom.list_namespaced_custom_object, GROUP, VERSION, kube_namespace, "sandboxes"
    )
    assert sandboxes["items"] == []


def test_only_v1beta1_is_served(kube_api: Any) -> None:
    ext = client.ApiextensionsV1Api(kube_api)
    for name in (
        "sandboxes.agents.x-k8s.io",
        "sandboxclaims.extensions.agents.x-k8s.io",
        "sandboxtemplates.extensions.agents.x-k8s.io",
        "sandboxwarmpools.extensions.agents.x-k8s.io",
    ):
        crd = read(kube_api, ext.read_custom_resource_definition, name)
        assert [v["name"] for v in crd["spec"]["versions"]] == ["v1beta1"]
        assert crd["spec"]["conversion"] == {"strategy": "None"}
        established = condition(crd, "Established")
        assert established is not None
        assert established["status"] == "True"


def test_pvc_burst_binds(kube_api: Any, kube_namespace: str) -> None:
    """200 claims at once all bind: every one gets a volume (the provisioner keeps up with a
    burst). How long it takes (~9 s on 2 cores) is in docs/testing.md; the deadline below is
    only there so a broken provisioner fails the test instead of hanging it."""
    core = client.CoreV1Api(kube_api)
    count = 200
    started = time.monotonic()
    for i in range(count):
        modes = ["ReadWriteMany"] if i % 2 else ["ReadWriteOnce"]
        core.create_namespaced_persistent_volume_claim(
            kube_namespace, pvc_body(f"burst-{i:03d}", modes)
        )
    bound = wait_for(
        kube_api,
        core.list_namespaced_persistent_volume_claim,
        kube_namespace,
        until=lambda objs: (
            len(objs)
            if len(objs) == count
            and all(o.get("status", {}).get("phase") == "Bound" for o in objs.values())
            else None
        ),
        what=f"{count} PVCs to be Bound",
        timeout=300,
    )
    assert bound == count
    print(f"{count} PVCs bound in {time.monotonic() - started:.1f}s")


def create_claim(
    custom: client.CustomObjectsApi, namespace: str, name: str, pool: str, labels: dict[str, str]
) -> None:
    custom.create_namespaced_custom_object(
        EXT_GROUP,
        VERSION,
        namespace,
        "sandboxclaims",
        {
            "apiVersion": f"{EXT_GROUP}/{VERSION}",
            "kind": "SandboxClaim",
            "metadata": {"name": name},
            "spec": {"warmPoolRef": {"name": pool}, "additionalPodMetadata": {"labels": labels}},
        },
    )


def test_label_allow_list_keeps_default_and_rejects_other_domains(
    kube_api: Any, kube_namespace: str
) -> None:
    custom = client.CustomObjectsApi(kube_api)
    create_template(custom, kube_namespace, "labels")
    create_pool(custom, kube_namespace, "labels", 1)
    wait_pool_ready(kube_api, kube_namespace, "labels", 1)
    create_claim(custom, kube_namespace, "allowed", "labels", {"sandbox.users.io/owner": "a"})
    create_claim(custom, kube_namespace, "outside", "labels", {"example.com/team": "x"})

    def settled(objs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]] | None:
        conds = {name: condition(objs.get(name, {}), "Ready") for name in ("allowed", "outside")}
        allowed, outside = conds["allowed"], conds["outside"]
        # The outside claim must fail for its label, not be merely pending.
        if (
            allowed
            and allowed["status"] == "True"
            and outside
            and outside["reason"] == ("InvalidMetadata")
        ):
            return {"allowed": allowed, "outside": outside}
        return None

    conds = wait_for(
        kube_api,
        custom.list_namespaced_custom_object,
        EXT_GROUP,
        VERSION,
        kube_namespace,
        "sandboxclaims",
        until=settled,
        what="claim 'allowed' Ready and claim 'outside' rejected",
    )
    assert (conds["outside"]["status"], conds["outside"]["reason"]) == ("False", "InvalidMetadata")
    refusal = (
        'invalid additionalPodMetadata: failed to validate label "example.com/team": '
        'label domain "example.com" is not in the allowlist'
    )
    # v1.0 says where the allowlist is configured.
    hint = (
        " (configure the allowed-label-domains key of the agent-sandbox-config ConfigMap in "
        "the controller namespace; default: sandbox.users.io)"
    )
    expected = refusal if build.agent_sandbox_before_v1() else refusal + hint
    assert conds["outside"]["message"] == expected
