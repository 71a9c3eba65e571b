"""NetworkPolicies: the default-deny fence around an allocation's Pods, with the rules
its profile (or its warm pool's template) lets through.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from contextsvc.kube.objects.blueprint import Blueprint
from contextsvc.kube.objects.kinds import Manifest
from contextsvc.kube.objects.labels import POOL_LABEL, pool_labels
from contextsvc.kube.objects.names import network_policy_name
from contextsvc.kube.objects.poolspec import PoolSpec


def peer_rule(rule: Mapping[str, Any], direction: str) -> Manifest:
    if "cidr" in rule:
        peer: Manifest = {"ipBlock": {"cidr": rule["cidr"]}}
    else:
        peer = {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": rule["namespace"]}}
        }
    body: Manifest = {direction: [peer]}
    if rule.get("ports"):
        protocol = rule.get("protocol", "TCP")
        body["ports"] = [{"protocol": protocol, "port": port} for port in rule["ports"]]
    return body


DNS_EGRESS: Manifest = {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}


def blueprint_network_rules(blueprint: Blueprint) -> tuple[list[Manifest], list[Manifest]]:
    """(ingress, egress) NetworkPolicy rules from a profile's rules, DNS out first."""
    return (
        [peer_rule(rule, "from") for rule in blueprint.ingress],
        [DNS_EGRESS, *(peer_rule(rule, "to") for rule in blueprint.egress)],
    )


def network_policy_manifest(
    spec: PoolSpec, *, ingress: Sequence[Manifest], egress: Sequence[Manifest]
) -> Manifest:
    """Default deny in and out for the allocation's Pods (direct Sandboxes, or the warm-pool
    Pods its claims took), except what the rules let through."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": network_policy_name(spec.name),
            "namespace": spec.namespace,
            "labels": pool_labels(spec.name),
        },
        "spec": {
            "podSelector": {"matchLabels": {POOL_LABEL: spec.name}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": copy.deepcopy(list(ingress)),
            "egress": copy.deepcopy(list(egress)),
        },
    }
