"""What a profile must satisfy before it is saved, with the message for each problem.
These checks need no cluster (the cluster checks are in test_services.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from profiles.models import SandboxProfile
from profiles.services import profile_problems
from profiles.validation import DocumentInvalid, normalised_document

# The seed's settings.json and sources.json, kept beside the rule engine's tests.
FIXTURES = Path(__file__).resolve().parents[2] / "rules" / "tests" / "fixtures"
SEED_SETTINGS = json.loads((FIXTURES / "settings.json").read_text())
SEED_SOURCES = json.loads((FIXTURES / "sources.json").read_text())


def builtin(**fields: Any) -> SandboxProfile:
    values: dict[str, Any] = {
        "name": "python-data-agent",
        "source": "builtin",
        "image": "registry.example.com/agent:1",
    }
    values.update(fields)
    return SandboxProfile(**values)


def test_a_plain_builtin_profile_is_valid() -> None:
    assert profile_problems(builtin(), check_cluster=False) == {}


@pytest.mark.parametrize(
    ("fields", "problems"),
    [
        ({"name": "Not_A_Label"}, {"name": ["must be a DNS-1123 label (lowercase, digits, '-')"]}),
        ({"image": ""}, {"image": ["a built-in profile needs an image reference"]}),
        ({"image": "bad image"}, {"image": ["a built-in profile needs an image reference"]}),
        ({"command": "sleep"}, {"command": ["must be a list of strings"]}),
        (
            {"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]},
            {"env": ["env[1].name 'A' is set twice"]},
        ),
        (
            {"env": [{"name": "1X", "value": "1"}]},
            {"env": ["env[0].name '1X' is not a valid variable name"]},
        ),
        (
            {"env": [{"name": "S", "valueFrom": {}}]},
            {"env": ["env[0] must be an object with exactly name and value"]},
        ),
        (
            {"resources": {"requests": {"cpu": "lots"}}},
            {"resources": ["requests.cpu 'lots' is not a positive Kubernetes quantity"]},
        ),
        (
            {"resources": {"limit": {}}},
            {"resources": ["unknown section 'limit' (requests or limits)"]},
        ),
        (
            {"pod_labels": {"context.rossoctl.io/pool": "other"}},
            {
                "pod_labels": [
                    'pod label "context.rossoctl.io/pool" is set by Context Service and cannot be overridden'
                ]
            },
        ),
        (
            {"pod_labels": {"app.kubernetes.io/managed-by": "me"}},
            {
                "pod_labels": [
                    'pod label "app.kubernetes.io/managed-by" is set by Context Service and cannot be overridden'
                ]
            },
        ),
        (
            {
                "volumes": [{"name": "data", "emptyDir": {}}],
                "volume_mounts": [{"name": "data", "mountPath": "/workspace"}],
            },
            {
                "volume_mounts": [
                    'container "sandbox" mounts "data" at /workspace, where the allocation\'s workspace goes'
                ]
            },
        ),
        (
            {
                "volumes": [{"name": "data", "emptyDir": {}}],
                "volume_mounts": [{"name": "data", "mountPath": "/workspace/cache"}],
            },
            {
                "volume_mounts": [
                    'container "sandbox" mounts "data" at /workspace/cache, where the allocation\'s workspace goes'
                ]
            },
        ),
        (
            {"volumes": [{"name": "workspace", "emptyDir": {}}]},
            {"volumes": ['volume "workspace" is reserved for Context Service']},
        ),
        (
            {"volumes": [{"name": "share", "nfs": {"server": "nfs.example", "path": "/"}}]},
            {"volumes": ['restricted volume-types: volume "share" is of type nfs']},
        ),
        ({"isolation": "firecracker"}, {"isolation": ["must be one of default, gvisor, kata"]}),
        (
            {"relaxations": ["root"]},
            {
                "relaxations": [
                    "unknown relaxation 'root'; choose from run-as-root, writable-root-filesystem, "
                    "privilege-escalation, keep-capabilities, service-account-token, "
                    "any-volume-type, unbounded-resources"
                ]
            },
        ),
        (
            {"egress": [{"cidr": "10.0.0.0/33"}]},
            {"egress": ["egress[0].cidr '10.0.0.0/33' is not a network like 10.0.0.0/8"]},
        ),
        (
            {"egress": [{"cidr": "10.0.0.0/8", "ports": [0]}]},
            {"egress": ["egress[0].ports must be a list of port numbers 1-65535"]},
        ),
        (
            {"egress": [{"namespace": "x"}]},
            {"egress": ["egress[0] has unknown key 'namespace'"]},
        ),
        (
            {"ingress": [{"namespace": "Bad!"}]},
            {"ingress": ["ingress[0].namespace 'Bad!' is not a namespace name"]},
        ),
        (
            {"is_default": True, "enabled": False},
            {"is_default": ["a disabled profile cannot be the default"]},
        ),
        (
            {"rules": {"permissions": {"allow": ["shell(grep"]}}},
            {"rules": ['permissions.allow[0]: "shell(grep" is missing its closing parenthesis']},
        ),
        (
            {"sources": {"web_access": {"enabled": "yes"}}},
            {"sources": ["web_access.enabled: expected true or false, got string"]},
        ),
    ],
)
def test_problems_name_the_field_and_entry(
    fields: dict[str, Any], problems: dict[str, list[str]]
) -> None:
    assert profile_problems(builtin(**fields), check_cluster=False) == problems


def test_template_profile_needs_a_reference() -> None:
    profile = SandboxProfile(
        name="t", source="template", template_namespace="", template_name="Bad_Name"
    )

    assert profile_problems(profile, check_cluster=False) == {
        "template_namespace": ["must be a namespace name"],
        "template_name": ["must be a SandboxTemplate name (DNS-1123 subdomain)"],
    }


@pytest.mark.parametrize(
    ("document", "content", "normalised"),
    [
        (
            "settings",
            {"permissions": {"allow": ["shell(ls:*)"]}},
            {"permissions": {"allow": ["shell(ls:*)"], "deny": []}},
        ),
        ("settings", SEED_SETTINGS, SEED_SETTINGS),
        ("sources", SEED_SOURCES, SEED_SOURCES),
    ],
)
def test_documents_are_stored_in_the_seed_form(
    document: str, content: dict[str, Any], normalised: dict[str, Any]
) -> None:
    assert normalised_document(document, content) == normalised


@pytest.mark.parametrize(
    ("document", "content", "message"),
    [
        ("settings", [], "settings.json: expected an object, got list"),
        (
            "settings",
            {"permissions": {"allow": ["shell(ls"]}},
            'permissions.allow[0]: "shell(ls" is missing its closing parenthesis',
        ),
        ("sources", [], "sources.json: expected an object, got list"),
        ("sources", {"package_managers": []}, "package_managers: expected an object, got list"),
    ],
)
def test_documents_the_rule_engine_refuses_are_invalid(
    document: str, content: object, message: str
) -> None:
    with pytest.raises(DocumentInvalid) as excinfo:
        normalised_document(document, content)

    assert (excinfo.value.status, excinfo.value.message) == (400, message)
