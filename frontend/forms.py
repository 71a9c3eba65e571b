from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet
from django.http import QueryDict

from approvals.models import DecisionKind, NotificationChannel, NotificationEvent
from contextsvc.core.auth import Role
from contextsvc.core.fields import AgentTypesField
from contextsvc.core.limits import LIMITS
from contextsvc.core.models import Scope
from profiles.models import SandboxProfile

STRATEGIES = [
    ("dedicated", "Dedicated: one ReadWriteOnce PVC per sandbox"),
    ("shared", "Shared: one ReadWriteMany PVC for all sandboxes"),
    ("existing", "Existing PVC, mounted read-only or read-write"),
    ("warmpool", "Claims from a warm pool"),
]


class AllocationForm(forms.Form):
    """Collects what the v1 request needs; the v1 parser (allocations/v1.py) validates it,
    so the form refuses exactly what the API refuses, with the same messages."""

    name = forms.CharField(max_length=200)
    namespace = forms.CharField(
        max_length=200, required=False, help_text="Default: the service's namespace"
    )
    replicas = forms.CharField(max_length=20, initial="1")
    strategy = forms.ChoiceField(choices=STRATEGIES, widget=forms.RadioSelect, initial="dedicated")
    size = forms.CharField(max_length=64, required=False, initial="1Gi")
    storage_class = forms.CharField(max_length=253, required=False)
    claim_name = forms.CharField(max_length=253, required=False)
    read_only = forms.BooleanField(required=False, initial=True)
    warm_pool = forms.CharField(max_length=253, required=False)
    profile = forms.ChoiceField(required=False)

    def __init__(self, *args: Any, profiles: QuerySet[SandboxProfile], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        profile_field = self.fields["profile"]
        assert isinstance(profile_field, forms.ChoiceField)
        profile_field.choices = [("", "— default —")] + [
            (p.name, f"{p.name}{' (default)' if p.is_default else ''}") for p in profiles
        ]

    def v1_body(self) -> dict[str, Any]:
        data = self.cleaned_data
        replicas_text = data["replicas"].strip()
        body: dict[str, Any] = {
            "name": data["name"].strip(),
            "replicas": int(replicas_text)
            if replicas_text.lstrip("-").isdigit()
            else replicas_text,
        }
        if data["namespace"].strip():
            body["namespace"] = data["namespace"].strip()
        if data["profile"]:
            body["profile"] = data["profile"]
        strategy = data["strategy"]
        if strategy == "warmpool":
            body["warmPoolRef"] = data["warm_pool"].strip()
        elif strategy == "existing":
            body["workspace"] = {
                "claimName": data["claim_name"].strip(),
                "readOnly": data["read_only"],
            }
        else:
            workspace = {
                "size": data["size"].strip(),
                "accessMode": "ReadWriteMany" if strategy == "shared" else "ReadWriteOnce",
            }
            if data["storage_class"].strip():
                workspace["storageClass"] = data["storage_class"].strip()
            body["workspace"] = workspace
        return body


def decision_body(post: QueryDict, asked: dict[str, Any]) -> dict[str, Any]:
    """The approval card's form as the API's decision body, which the API's parser
    (approvals/contract.parse_decision) reads: the form refuses what the API refuses, with
    its messages. The scope picker starts on "this context"; ``asked`` is the operation the
    card showed, of whose kind an edit is."""
    expires_in = post.get("expires_in", "").strip()
    body: dict[str, Any] = {
        "decision": post.get("decision", ""),
        "reason": post.get("reason", "").strip(),
        "scope": post.get("scope") or "context",
        "expiresInSeconds": int(expires_in) if expires_in.isdigit() else (expires_in or None),
        "rule": post.get("rule") or None,
        "version": post.get("version") or None,
    }
    if body["decision"] == DecisionKind.APPROVE_EDITED:
        body["operation"] = edited_operation(post, asked)
    return body


def edited_operation(post: QueryDict, asked: dict[str, Any]) -> dict[str, Any]:
    """The reviewer's edit as an operation of the asked one's kind (the service judges
    it)."""
    if asked["kind"] == "shell":
        return {"kind": "shell", "command": post.get("command", "")}
    if asked["kind"] == "file":
        return {"kind": "file", "action": asked["action"], "path": post.get("path", "")}
    return {
        "kind": "network",
        "host": post.get("host", "").strip(),
        "direction": asked["direction"],
    }


class ApiClientForm(forms.Form):
    name = forms.SlugField(max_length=64)
    description = forms.CharField(max_length=255, required=False)
    scopes = forms.MultipleChoiceField(choices=Scope.choices, widget=forms.CheckboxSelectMultiple)
    agent_types = AgentTypesField()


class UserForm(forms.Form):
    username = forms.CharField(max_length=150)
    password = forms.CharField(widget=forms.PasswordInput, min_length=12)
    role = forms.ChoiceField(choices=[(role, role) for role in Role.ALL])
    email = forms.CharField(
        max_length=254, required=False, help_text="Approval requests and escalations go here"
    )


class EmailForm(forms.Form):
    email = forms.CharField(max_length=254, required=False)


class ChannelForm(forms.Form):
    name = forms.SlugField(max_length=64)
    kind = forms.ChoiceField(choices=NotificationChannel.Kind.choices)
    url = forms.CharField(max_length=2000, help_text="Where to POST (kept encrypted)")
    agent_types = AgentTypesField(
        initial="*", help_text="Agent types (profiles) whose requests it tells of, or * for all"
    )
    events = forms.MultipleChoiceField(
        choices=[
            (value, label)
            for value, label in NotificationEvent.choices
            if value != NotificationEvent.TEST
        ],
        widget=forms.CheckboxSelectMultiple,
        initial=[NotificationEvent.CREATED, NotificationEvent.ESCALATED],
    )


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=[(role, role) for role in Role.ALL])


class DocumentUploadForm(forms.Form):
    document = forms.FileField(
        help_text="settings.json or sources.json",
        widget=forms.ClearableFileInput(attrs={"aria-label": "Document to import"}),
    )


class TeamForm(forms.Form):
    """No maxlength on the inputs: a browser would cut a long name silently; the service
    refuses it, saying why (services.check_team_name)."""

    name = forms.CharField(help_text="Lowercase letters, digits and hyphens; 63 at most")
    description = forms.CharField(required=False)


class QuotaForm(forms.Form):
    """A team's limits as an admin writes them (empty: no limit): a field for each of the
    kernel's declarations (contextsvc/core/limits.py), read by its parser, as ``manage.py
    team quota`` reads them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for limit in LIMITS:
            self.fields[limit.name] = forms.CharField(
                max_length=32 if limit.quantity else 20, required=False, help_text=limit.help
            )

    def limits(self) -> dict[str, int | None]:
        """The Team fields and their new values; a problem is a form error of its field. A
        limit the form did not send is left as it is (empty sent means none)."""
        found: dict[str, int | None] = {}
        for limit in LIMITS:
            if self.add_prefix(limit.name) not in self.data:
                continue
            try:
                found[limit.field] = limit.parse(self.cleaned_data[limit.name])
            except ValueError as exc:
                self.add_error(limit.name, str(exc))
        return found


class MoveForm(forms.Form):
    """Put an API client or a person in a team."""

    kind = forms.ChoiceField(choices=[("client", "API client"), ("person", "Person")])
    member = forms.CharField(max_length=150)
    team = forms.SlugField(max_length=63)
