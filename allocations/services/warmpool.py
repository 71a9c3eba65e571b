"""The check a warm-pool allocation's pool passes: it exists, and its SandboxTemplate passes
the Pod Security table (podsecurity) but for the restricted rules its owner relaxed on the
pool, by name. The service does not own the template, but it does not hand out unhardened
sandboxes silently.

The check is made of a verdict: what the pool and its template say, as data. The watcher
records each managed namespace's pools' verdicts as they change (allocations/services/
seen.py), and a POST reads that row instead of the two objects while the watcher vouches
for its caches; a scale-up, and a POST without such a watcher, reads the objects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from allocations import selectors
from contextsvc.infra.errors import InvalidRequest, cluster_call
from contextsvc.kube import client as kube
from contextsvc.kube import podsecurity
from contextsvc.kube.objects.kinds import SANDBOX_TEMPLATE, SANDBOX_WARM_POOL
from contextsvc.kube.objects.warmpool import (
    WARM_POOL_RELAXATIONS_ANNOTATION,
    template_pod,
    warm_pool_fence,
    warm_pool_relaxations,
    warm_pool_template_name,
)

# What a verdict holds (JSON, as WarmPoolSeen stores it): the template's name, whether it
# was found, the relaxations the pool's owner made, the template's Pod Security problems,
# and the NetworkPolicy rules the claimed Pods get (warm_pool_fence).
Verdict = dict[str, Any]


@dataclass(frozen=True)
class WarmPoolCheck:
    relaxations: frozenset[str]
    # NetworkPolicy rules for the claimed Pods (warm_pool_fence).
    fence: dict[str, list[dict[str, Any]]]


def warm_pool_verdict(pool: dict[str, Any], template: dict[str, Any] | None) -> Verdict:
    """What ``pool`` and its ``template`` (None: not found) say for a create."""
    template_name = warm_pool_template_name(pool) or ""
    if template is None:
        return {"template": template_name, "found": False}
    relaxations = warm_pool_relaxations(pool) & podsecurity.RELAXABLE
    pod_spec, annotations = template_pod(template)
    return {
        "template": template_name,
        "found": True,
        "relaxations": sorted(relaxations),
        "problems": podsecurity.violations(
            pod_spec, annotations=annotations, relaxations=relaxations
        ),
        "fence": warm_pool_fence(template),
    }


def warm_pool_checked(warm_pool: str, namespace: str, verdict: Verdict | None) -> WarmPoolCheck:
    """The check passed, or the 400 that says why not (``verdict`` None: no such pool)."""
    if verdict is None:
        raise InvalidRequest(f'warmPoolRef "{warm_pool}" does not exist in namespace "{namespace}"')
    template_name = verdict["template"]
    if not verdict["found"]:
        raise InvalidRequest(
            f'warmPoolRef "{warm_pool}": its SandboxTemplate "{template_name}" '
            f'does not exist in namespace "{namespace}"'
        )
    problems = verdict["problems"]
    if problems:
        refused = InvalidRequest(
            f'warmPoolRef "{warm_pool}": its SandboxTemplate "{template_name}" is not '
            f"hardened ({problems[0]}); harden it, or relax rules by name in the pool's "
            f"{WARM_POOL_RELAXATIONS_ANNOTATION} annotation"
        )
        refused.details = {"problems": {"warmPoolRef": problems}}
        raise refused
    return WarmPoolCheck(frozenset(verdict["relaxations"]), verdict["fence"])


def _verdict_from_cluster(warm_pool: str, namespace: str) -> Verdict | None:
    with cluster_call():
        pool = kube.get_object(SANDBOX_WARM_POOL, namespace, warm_pool)
        if pool is None:
            return None
        template_name = warm_pool_template_name(pool)
        template = (
            kube.get_object(SANDBOX_TEMPLATE, namespace, template_name) if template_name else None
        )
    return warm_pool_verdict(pool, template)


def warm_pool_check(warm_pool: str, namespace: str, *, vouched: bool) -> WarmPoolCheck:
    """At create (from the watcher's record while it vouches for it: ``vouched``, from
    selectors.watcher_vouches; else from the cluster), and at every scale-up (not vouched:
    the template may have been edited since)."""
    if vouched:
        verdict = selectors.warm_pool_verdict(namespace=namespace, name=warm_pool)
    else:
        verdict = _verdict_from_cluster(warm_pool, namespace)
    return warm_pool_checked(warm_pool, namespace, verdict)
