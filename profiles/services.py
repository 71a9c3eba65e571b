"""Writes for sandbox profiles, and the blueprint an allocation gets from one."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models import ProtectedError

from contextsvc.core import capabilities
from contextsvc.core.services import audit_record
from contextsvc.infra import namespaces
from contextsvc.infra.errors import (
    AlreadyExists,
    Conflict,
    InvalidRequest,
    NotFound,
    cluster_call,
)
from contextsvc.infra.validators import is_dns1123_label
from contextsvc.kube import client as kube
from contextsvc.kube.objects.blueprint import Blueprint, builtin_blueprint, template_blueprint
from contextsvc.kube.objects.kinds import SANDBOX_TEMPLATE
from profiles import queue, validation
from profiles.models import (
    ExecutorIsolation,
    Isolation,
    ProfileSource,
    SandboxProfile,
    runtime_class_for,
)

# Model field → the API field that sets it (problems name what the caller sent).
API_FIELDS = {
    "is_default": "default",
    "pod_labels": "podLabels",
    "volume_mounts": "volumeMounts",
    "template_namespace": "template",
    "template_name": "template",
    "executor_isolation": "executorIsolation",
    "warm_pool_min": "warmPool",
    "warm_pool_max": "warmPool",
    "warm_pool_namespace": "warmPool",
    "approval_policy": "approvals",
}
MAX_WARM_POOL = 100


class ProfileInvalid(InvalidRequest):
    """The profile fails validation; ``problems`` maps each API field to what is wrong."""

    def __init__(self, problems: validation.Problems) -> None:
        by_api_field: validation.Problems = {}
        for field, messages in problems.items():
            by_api_field.setdefault(API_FIELDS.get(field, field), []).extend(messages)
        field, messages = next(iter(by_api_field.items()))
        super().__init__(f"{field}: {messages[0]}")
        self.details = {"problems": by_api_field}


def _relaxations(profile: SandboxProfile) -> frozenset[str]:
    return frozenset(profile.relaxations or ())


def builtin_profile_blueprint(profile: SandboxProfile, *, service_account: str | None) -> Blueprint:
    kwargs: dict[str, Any] = {}
    if profile.command:
        kwargs["command"] = profile.command
    if profile.resources:
        kwargs["resources"] = profile.resources
    return builtin_blueprint(
        image=profile.image,
        service_account=service_account,
        args=profile.args,
        env=profile.env,
        volumes=profile.volumes,
        volume_mounts=profile.volume_mounts,
        labels=profile.pod_labels,
        relaxations=_relaxations(profile),
        runtime_class=runtime_class_for(profile.isolation),
        ingress=profile.ingress,
        egress=profile.egress,
        **kwargs,
    )


def read_template(profile: SandboxProfile) -> dict[str, Any]:
    problem = capabilities.current().extensions_problem()
    if problem:
        raise InvalidRequest(f"profile {profile.name!r} copies a SandboxTemplate, but {problem}")
    with cluster_call():
        template = kube.get_object(
            SANDBOX_TEMPLATE, profile.template_namespace, profile.template_name
        )
    if template is None:
        raise InvalidRequest(
            f'SandboxTemplate "{profile.template_name}" does not exist in namespace '
            f'"{profile.template_namespace}"'
        )
    return template


def template_profile_blueprint(profile: SandboxProfile) -> Blueprint:
    return template_blueprint(
        read_template(profile),
        relaxations=_relaxations(profile),
        runtime_class=runtime_class_for(profile.isolation),
        ingress=profile.ingress,
        egress=profile.egress,
    )


def profile_blueprint(profile: SandboxProfile, *, service_account: str | None) -> Blueprint:
    """Copy the profile's blueprint now (a template is read from the cluster)."""
    if profile.source == ProfileSource.TEMPLATE:
        blueprint = template_profile_blueprint(profile)
        # The template may have changed since the profile was saved: checked again, whole.
        problems: validation.Problems = {}
        validation.check_blueprint(problems, blueprint, "template_name")
        if problems:
            raise ProfileInvalid(problems)
        return blueprint
    return builtin_profile_blueprint(profile, service_account=service_account)


# --- Validation and writes -------------------------------------------------------------------


def profile_problems(profile: SandboxProfile, *, check_cluster: bool = True) -> validation.Problems:
    problems: validation.Problems = {}
    if not is_dns1123_label(profile.name):
        validation._add(problems, "name", "must be a DNS-1123 label (lowercase, digits, '-')")
    if profile.is_default and not profile.enabled:
        validation._add(problems, "is_default", "a disabled profile cannot be the default")
    if profile.source == ProfileSource.BUILTIN:
        if not profile.image or any(char.isspace() for char in profile.image):
            validation._add(problems, "image", "a built-in profile needs an image reference")
        validation._strings(problems, "command", profile.command)
        validation._strings(problems, "args", profile.args)
        validation.check_env(problems, profile.env)
        validation.check_resources(problems, profile.resources)
        validation.check_labels(problems, profile.pod_labels)
        validation.check_volumes(problems, profile.volumes, profile.volume_mounts)
        if not problems:
            validation.check_blueprint(
                problems, builtin_profile_blueprint(profile, service_account=None), None
            )
    elif profile.source == ProfileSource.TEMPLATE:
        validation.check_template_reference(
            problems, profile.template_namespace, profile.template_name
        )
    else:
        validation._add(problems, "source", "must be builtin or template")
    if profile.isolation not in Isolation.values:
        validation._add(problems, "isolation", f"must be one of {', '.join(Isolation.values)}")
    if profile.executor_isolation not in ExecutorIsolation.values:
        validation._add(
            problems,
            "executor_isolation",
            f"must be one of {', '.join(ExecutorIsolation.values)}",
        )
    validation.check_relaxations(problems, profile.relaxations)
    _warm_pool_problems(profile, problems)
    validation.check_network(problems, "egress", profile.egress, namespaces=False)
    validation.check_network(problems, "ingress", profile.ingress, namespaces=True)
    validation.check_rules(problems, profile.rules)
    validation.check_sources(problems, profile.sources)
    validation.check_approval_policy(problems, profile.approval_policy)
    if check_cluster and not problems:
        _cluster_problems(profile, problems)
    return problems


def _warm_pool_problems(profile: SandboxProfile, problems: validation.Problems) -> None:
    low, high = profile.warm_pool_min, profile.warm_pool_max
    if low is None and high is None:
        return
    if low is None or high is None or not 0 <= low <= high or not 1 <= high <= MAX_WARM_POOL:
        validation._add(
            problems,
            "warm_pool_max",
            f"min and max must satisfy 0 <= min <= max, 1 <= max <= {MAX_WARM_POOL}",
        )
    try:
        namespaces.check_managed(profile.warm_pool_namespace or settings.CS_NAMESPACE)
    except InvalidRequest as exc:
        validation._add(problems, "warm_pool_namespace", exc.message)


def _cluster_problems(profile: SandboxProfile, problems: validation.Problems) -> None:
    found = capabilities.current()
    if profile.has_warm_pool:
        problem = found.extensions_problem()
        if problem:
            validation._add(problems, "warm_pool_max", f"a warm pool needs {problem}")
    runtime_class = runtime_class_for(profile.isolation)
    if runtime_class and runtime_class not in found.runtime_classes:
        have = ", ".join(found.runtime_classes) or "none"
        validation._add(
            problems,
            "isolation",
            f'{profile.isolation} needs the RuntimeClass "{runtime_class}", which this cluster '
            f"does not have (it has: {have})",
        )
    if profile.source == ProfileSource.TEMPLATE:
        try:
            blueprint = template_profile_blueprint(profile)
        except InvalidRequest as exc:
            validation._add(problems, "template_name", exc.message)
            return
        validation.check_blueprint(problems, blueprint, "template_name")


FIELDS = (
    "description",
    "enabled",
    "is_default",
    "source",
    "image",
    "command",
    "args",
    "env",
    "resources",
    "pod_labels",
    "volumes",
    "volume_mounts",
    "template_namespace",
    "template_name",
    "isolation",
    "executor_isolation",
    "relaxations",
    "egress",
    "ingress",
    "rules",
    "sources",
    "approval_policy",
    "warm_pool_min",
    "warm_pool_max",
    "warm_pool_namespace",
)
# The fields that hold JSON documents (lists and objects), as the model declares them.
JSON_FIELDS = tuple(
    name for name in FIELDS if isinstance(SandboxProfile._meta.get_field(name), models.JSONField)
)


def profile_save(*, name: str, values: dict[str, Any], actor: str, create: bool) -> SandboxProfile:
    """Create or update a profile from validated-shape values; refuses invalid ones."""
    if create:
        profile = SandboxProfile(name=name)
    else:
        found = SandboxProfile.objects.filter(name=name).first()
        if found is None:
            raise NotFound(f'profile "{name}" not found')
        profile = found
    if create and "source" not in values:
        # What the body gives decides: a template reference, else the built-in runtime.
        profile.source = (
            ProfileSource.TEMPLATE if "template_name" in values else ProfileSource.BUILTIN
        )
    for key, value in values.items():
        if key not in FIELDS:
            raise InvalidRequest(f'unknown profile field "{key}"')
        setattr(profile, key, value)
    if profile.has_warm_pool and not profile.warm_pool_namespace:
        profile.warm_pool_namespace = settings.CS_NAMESPACE
    profile.updated_by = actor
    problems = profile_problems(profile)
    if problems:
        raise ProfileInvalid(problems)
    try:
        with transaction.atomic():
            if profile.is_default:
                # One default: taking the flag takes it from whoever had it.
                SandboxProfile.objects.select_for_update().filter(is_default=True).exclude(
                    name=name
                ).update(is_default=False)
            profile.save()
            audit_record(
                actor=actor,
                action="profile.create" if create else "profile.update",
                target_type="profile",
                target=name,
                payload={
                    key: values[key] for key in sorted(values) if key not in ("rules", "sources")
                },
            )
            # The warm pool follows the profile (made, changed, or removed) once committed.
            queue.sync_warm_pool(name)
    except IntegrityError:
        raise AlreadyExists(f'profile "{name}" already exists') from None
    return profile


def profile_delete(*, name: str, actor: str) -> None:
    with transaction.atomic():
        profile = SandboxProfile.objects.select_for_update().filter(name=name).first()
        if profile is None:
            raise NotFound(f'profile "{name}" not found')
        try:
            # Allocations protect the profile they use until they are released.
            with transaction.atomic():
                profile.delete()
        except ProtectedError as exc:
            in_use = len(exc.protected_objects)
            raise Conflict(f'profile "{name}" is used by {in_use} active allocation(s)') from None
        audit_record(actor=actor, action="profile.delete", target_type="profile", target=name)
        queue.sync_warm_pool(name)


def profile_for_allocation(name: str) -> SandboxProfile | None:
    """The profile a direct allocation runs: the one named, or the default, or None for the
    built-in runtime. Unknown or disabled names are the caller's error."""
    if name:
        profile = SandboxProfile.objects.filter(name=name, enabled=True).first()
        if profile is None:
            raise InvalidRequest(f'profile "{name}" does not exist or is disabled')
        return profile
    return SandboxProfile.objects.filter(is_default=True, enabled=True).first()
