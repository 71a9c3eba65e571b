from __future__ import annotations

from django.db import models
from django.db.models import Q


class Isolation(models.TextChoices):
    DEFAULT = "default", "Default (shared kernel)"
    GVISOR = "gvisor", "gVisor"
    KATA = "kata", "Kata Containers"


class ExecutorIsolation(models.TextChoices):
    """How the agent's executor (cs_agent.Executor) isolates each command it runs."""

    NAMESPACES = "namespaces", "User, mount and PID namespaces rooted at the context"
    NONE = "none", "None (only if the agent also opts in)"


class ProfileSource(models.TextChoices):
    BUILTIN = "builtin", "Built-in (image, command, env, resources)"
    TEMPLATE = "template", "Copied from a SandboxTemplate"


class SandboxProfile(models.Model):
    """A platform-managed runtime blueprint for direct allocations, and the operation rules
    and sources of the agent type that runs in it. Callers choose one by name; they never
    send Pod specs."""

    name = models.CharField(max_length=63, unique=True, help_text="A DNS-1123 label.")
    description = models.CharField(max_length=500, blank=True)
    enabled = models.BooleanField(default=True)
    is_default = models.BooleanField(
        default=False, help_text="Used by direct allocations that name no profile."
    )
    source = models.CharField(max_length=16, choices=ProfileSource.choices)

    # Built-in blueprint
    image = models.CharField(max_length=500, blank=True)
    command = models.JSONField(default=list, blank=True)
    args = models.JSONField(default=list, blank=True)
    env = models.JSONField(default=list, blank=True)
    resources = models.JSONField(default=dict, blank=True)
    pod_labels = models.JSONField(default=dict, blank=True)
    volumes = models.JSONField(default=list, blank=True)
    volume_mounts = models.JSONField(default=list, blank=True)

    # Template blueprint: copied from the cluster at allocation time
    template_namespace = models.CharField(max_length=63, blank=True)
    template_name = models.CharField(max_length=253, blank=True)

    # Security and network
    isolation = models.CharField(
        max_length=16, choices=Isolation.choices, default=Isolation.DEFAULT
    )
    relaxations = models.JSONField(
        default=list, blank=True, help_text="Hardened defaults this profile switches off."
    )
    executor_isolation = models.CharField(
        max_length=16,
        choices=ExecutorIsolation.choices,
        default=ExecutorIsolation.NAMESPACES,
        help_text="How the agent's executor isolates each command (inside the Pod).",
    )
    egress = models.JSONField(
        default=list, blank=True, help_text='[{"cidr": "10.0.0.0/8", "ports": [443]}, …]'
    )
    ingress = models.JSONField(
        default=list,
        blank=True,
        help_text='Who may connect in: [{"namespace": "serverless-harness"}, {"cidr": …}]',
    )

    # Warm capacity the service makes and owns for the profile (docs/profiles.md, "Warm
    # pools"): a SandboxTemplate and a SandboxWarmPool in warm_pool_namespace, scaled from
    # demand between min and max. No max: no warm pool.
    warm_pool_min = models.PositiveSmallIntegerField(null=True, blank=True)
    warm_pool_max = models.PositiveSmallIntegerField(null=True, blank=True)
    warm_pool_namespace = models.CharField(max_length=63, blank=True)

    # The agent type's settings.json (operation rules) and sources.json
    rules = models.JSONField(default=dict, blank=True)
    sources = models.JSONField(default=dict, blank=True)
    # How its operations reach people (profiles/approvalpolicy.py): the two-person rule,
    # escalation, which requests e-mail the approvers.
    approval_policy = models.JSONField(
        default=dict,
        blank=True,
        help_text='{"twoPersonRule": true, "escalateAfter": 0.5, "escalateTo": ["bob"], '
        '"email": "all"}',
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"], condition=Q(is_default=True), name="one_default_profile"
            ),
            models.CheckConstraint(
                condition=Q(source__in=["builtin", "template"]), name="profile_source"
            ),
            models.CheckConstraint(
                condition=Q(warm_pool_max__isnull=True)
                | Q(warm_pool_min__lte=models.F("warm_pool_max"), warm_pool_max__gte=1),
                name="profile_warm_pool_bounds",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def has_warm_pool(self) -> bool:
        return self.warm_pool_max is not None


RUNTIME_CLASS: dict[str, str] = {Isolation.GVISOR: "gvisor", Isolation.KATA: "kata"}


def runtime_class_for(isolation: str) -> str | None:
    """The RuntimeClass an isolation mode selects (None: the cluster default)."""
    return RUNTIME_CLASS.get(isolation)
