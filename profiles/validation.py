"""Checks a profile must pass before it is saved. Each problem names the field and, for
lists, the offending entry, so an admin can fix exactly that line."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from contextsvc.core.auth import Role
from contextsvc.core.users import has_role
from contextsvc.infra.errors import InvalidRequest
from contextsvc.infra.validators import is_dns1123_label, is_dns1123_subdomain
from contextsvc.kube import podsecurity
from contextsvc.kube.objects.blueprint import (
    PART_LABELS,
    PART_MOUNTS,
    PART_POD,
    PART_VOLUMES,
    Blueprint,
)
from contextsvc.kube.objects.hardening import Relaxation
from contextsvc.quantity import is_positive_quantity
from profiles.approvalpolicy import PolicyError, parse_approval_policy
from rules.model import RuleSyntaxError, SourcesError
from rules.settings import parse_settings
from rules.sources import parse_sources

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*\Z")
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
PROTOCOLS = ("TCP", "UDP", "SCTP")

Problems = dict[str, list[str]]


def _add(problems: Problems, field: str, message: str) -> None:
    problems.setdefault(field, []).append(message)


def _strings(problems: Problems, field: str, value: Any) -> None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        _add(problems, field, "must be a list of strings")


def check_env(problems: Problems, env: Any) -> None:
    if not isinstance(env, list):
        _add(problems, "env", "must be a list of {name, value} objects")
        return
    seen: set[str] = set()
    for index, item in enumerate(env):
        where = f"env[{index}]"
        if not isinstance(item, dict) or set(item) != {"name", "value"}:
            _add(problems, "env", f"{where} must be an object with exactly name and value")
            continue
        name, value = item["name"], item["value"]
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            _add(problems, "env", f"{where}.name {name!r} is not a valid variable name")
        elif name in seen:
            _add(problems, "env", f"{where}.name {name!r} is set twice")
        else:
            seen.add(name)
        if not isinstance(value, str):
            _add(problems, "env", f"{where}.value must be a string")


def check_resources(problems: Problems, resources: Any) -> None:
    if not isinstance(resources, dict):
        _add(problems, "resources", "must be an object with requests and/or limits")
        return
    for section, amounts in resources.items():
        if section not in ("requests", "limits"):
            _add(problems, "resources", f"unknown section {section!r} (requests or limits)")
            continue
        if not isinstance(amounts, dict):
            _add(problems, "resources", f"{section} must be an object")
            continue
        for resource, quantity in amounts.items():
            if not is_positive_quantity(quantity):
                _add(
                    problems,
                    "resources",
                    f"{section}.{resource} {quantity!r} is not a positive Kubernetes quantity",
                )


def check_labels(problems: Problems, labels: Any) -> None:
    if not isinstance(labels, dict):
        _add(problems, "pod_labels", "must be an object of label key to value")
        return
    for key, value in labels.items():
        if not _LABEL_KEY.match(str(key)) or len(str(key)) > 316:
            _add(problems, "pod_labels", f"{key!r} is not a valid label key")
        if not isinstance(value, str) or len(value) > 63:
            _add(
                problems, "pod_labels", f"{key!r} must have a string value of at most 63 characters"
            )


def check_volumes(problems: Problems, volumes: Any, mounts: Any) -> None:
    """The shapes Kubernetes needs, so a profile fails on save rather than at its first
    allocation: named volumes, and mounts of those volumes at absolute paths."""
    names: set[str] = set()
    if not isinstance(volumes, list):
        _add(problems, "volumes", "must be a list of volumes")
    else:
        for index, volume in enumerate(volumes):
            name = volume.get("name") if isinstance(volume, dict) else None
            if not isinstance(name, str) or not is_dns1123_label(name):
                _add(problems, "volumes", f"volumes[{index}] needs a name that is a DNS-1123 label")
            elif name in names:
                _add(problems, "volumes", f"volumes[{index}].name {name!r} is used twice")
            else:
                names.add(name)
    if not isinstance(mounts, list):
        _add(problems, "volume_mounts", "must be a list of mounts")
        return
    for index, mount in enumerate(mounts):
        where = f"volumeMounts[{index}]"
        if not isinstance(mount, dict):
            _add(problems, "volume_mounts", f"{where} must be an object")
            continue
        path = mount.get("mountPath")
        if not isinstance(path, str) or not path.startswith("/"):
            _add(problems, "volume_mounts", f"{where}.mountPath must be an absolute path")
        if mount.get("name") not in names:
            _add(
                problems,
                "volume_mounts",
                f"{where}.name {mount.get('name')!r} is not one of the profile's volumes",
            )


def _ports(problems: Problems, field: str, where: str, rule: Mapping[str, Any]) -> None:
    ports = rule.get("ports", [])
    if not isinstance(ports, list) or not all(
        isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= 65535
        for port in ports
    ):
        _add(problems, field, f"{where}.ports must be a list of port numbers 1-65535")
    protocol = rule.get("protocol", "TCP")
    if protocol not in PROTOCOLS:
        _add(problems, field, f"{where}.protocol must be one of {', '.join(PROTOCOLS)}")


def check_network(problems: Problems, field: str, rules: Any, *, namespaces: bool) -> None:
    allowed = (
        {"cidr", "ports", "protocol", "namespace"} if namespaces else {"cidr", "ports", "protocol"}
    )
    if not isinstance(rules, list):
        _add(problems, field, "must be a list of rules")
        return
    for index, rule in enumerate(rules):
        where = f"{field}[{index}]"
        if not isinstance(rule, dict):
            _add(problems, field, f"{where} must be an object")
            continue
        unknown = sorted(set(rule) - allowed)
        if unknown:
            _add(problems, field, f"{where} has unknown key {unknown[0]!r}")
        targets = [key for key in ("cidr", "namespace") if key in rule]
        if len(targets) != 1:
            wanted = "cidr or namespace" if namespaces else "cidr"
            _add(problems, field, f"{where} needs exactly one of: {wanted}")
        elif targets[0] == "cidr":
            try:
                ipaddress.ip_network(str(rule["cidr"]), strict=True)
            except ValueError:
                _add(
                    problems,
                    field,
                    f"{where}.cidr {rule['cidr']!r} is not a network like 10.0.0.0/8",
                )
        elif not is_dns1123_label(rule["namespace"]):
            _add(
                problems, field, f"{where}.namespace {rule['namespace']!r} is not a namespace name"
            )
        _ports(problems, field, where, rule)


def check_rules(problems: Problems, rules: Any) -> None:
    if rules in ({}, None):
        return
    try:
        parse_settings(rules)
    except RuleSyntaxError as exc:
        _add(problems, "rules", str(exc))


def check_approval_policy(problems: Problems, raw: Any) -> None:
    try:
        policy = parse_approval_policy(raw)
    except PolicyError as exc:
        _add(problems, "approval_policy", str(exc))
        return
    found = {
        person.username: person
        for person in User.objects.filter(username__in=policy.escalate_to).prefetch_related(
            "groups"
        )
    }
    for username in policy.escalate_to:
        person = found.get(username)
        if person is None or not person.is_active or not has_role(person, Role.APPROVER):
            _add(
                problems,
                "approval_policy",
                f"escalateTo: {username!r} is not an active person with the approver role",
            )


def check_sources(problems: Problems, sources: Any) -> None:
    if sources in ({}, None):
        return
    try:
        parse_sources(sources)
    except SourcesError as exc:
        _add(problems, "sources", str(exc))


@dataclass(frozen=True)
class Document:
    """One of the agent type's documents, exported and imported as ``<name>.json``."""

    field: str  # the profile field that holds it
    parse: Callable[[object], Any]
    error: type[ValueError]


DOCUMENTS = {
    "settings": Document("rules", parse_settings, RuleSyntaxError),
    "sources": Document("sources", parse_sources, SourcesError),
}


class DocumentInvalid(InvalidRequest):
    """A settings.json or sources.json the rule engine refuses; the message names the entry."""


def normalised_document(document: str, content: object) -> dict[str, Any]:
    """The content of ``DOCUMENTS[document]`` in the seed's form, as the profile stores it."""
    kind = DOCUMENTS[document]
    try:
        normalised: dict[str, Any] = kind.parse(content).to_json()
    except kind.error as exc:
        raise DocumentInvalid(str(exc)) from None
    return normalised


# Where a built-in profile's blueprint problems are reported: the field that set that part.
BUILTIN_FIELDS = {
    PART_LABELS: "pod_labels",
    PART_VOLUMES: "volumes",
    PART_MOUNTS: "volume_mounts",
    PART_POD: "image",
}


def check_blueprint(problems: Problems, blueprint: Blueprint, field: str | None) -> None:
    """Every problem of the blueprint, under ``field`` (a template profile: its template),
    or under the built-in profile field that set the part it is about."""
    for part, problem in podsecurity.sandbox_problems(blueprint):
        _add(problems, field or BUILTIN_FIELDS[part], problem)


def check_relaxations(problems: Problems, relaxations: Any) -> None:
    if not isinstance(relaxations, list) or not all(isinstance(r, str) for r in relaxations):
        _add(problems, "relaxations", "must be a list of names")
        return
    choices = ", ".join(Relaxation.ALL)
    for relaxation in relaxations:
        if relaxation not in Relaxation.ALL:
            _add(
                problems, "relaxations", f"unknown relaxation {relaxation!r}; choose from {choices}"
            )


def check_template_reference(problems: Problems, namespace: str, name: str) -> None:
    if not is_dns1123_label(namespace):
        _add(problems, "template_namespace", "must be a namespace name")
    if not is_dns1123_subdomain(name):
        _add(problems, "template_name", "must be a SandboxTemplate name (DNS-1123 subdomain)")
