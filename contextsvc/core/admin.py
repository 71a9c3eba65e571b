from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from contextsvc.core import services
from contextsvc.core.fields import AgentTypesField
from contextsvc.core.models import ApiClient, ApiToken, AuditEntry, ProcessHeartbeat, Scope


def _actor(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


class ReadOnlyAdmin(admin.ModelAdmin):
    """For rows that change only through the services (the API and the dashboard call
    them, and they write the audit entry): the admin only looks."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ProcessHeartbeat)
class ProcessHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("kind", "hostname", "pid", "started_at", "last_seen")
    list_filter = ("kind",)
    readonly_fields = ("kind", "hostname", "pid", "started_at", "last_seen")


class ApiClientForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(choices=Scope.choices, widget=forms.CheckboxSelectMultiple)
    agent_types = AgentTypesField()

    class Meta:
        model = ApiClient
        fields = ("name", "description", "scopes", "agent_types", "is_active")


class ApiTokenInline(admin.TabularInline):
    model = ApiToken
    extra = 0
    can_delete = False
    fields = ("prefix", "created_at", "last_used_at", "expires_at", "revoked_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ApiClient)
class ApiClientAdmin(admin.ModelAdmin):
    form = ApiClientForm
    list_display = ("name", "description", "scopes", "agent_types", "is_active", "created_at")
    inlines = [ApiTokenInline]
    actions = ["issue_token"]

    def save_model(self, request: HttpRequest, obj: ApiClient, form: Any, change: bool) -> None:
        # Through the services, so that the audit log records who did it.
        if change:
            services.api_client_update(
                client=obj,
                scopes=form.cleaned_data["scopes"],
                agent_types=form.cleaned_data["agent_types"],
                description=obj.description,
                is_active=obj.is_active,
                actor=_actor(request),
            )
        else:
            created = services.api_client_create(
                name=obj.name,
                scopes=form.cleaned_data["scopes"],
                agent_types=form.cleaned_data["agent_types"],
                description=obj.description,
                actor=_actor(request),
                created_by=request.user,  # type: ignore[arg-type]
            )
            obj.pk = created.pk

    @admin.action(description="Issue a new token (shown once)")
    def issue_token(self, request: HttpRequest, queryset: QuerySet[ApiClient]) -> None:
        for client in queryset:
            _, raw = services.api_token_issue(
                client=client,
                actor=_actor(request),
                created_by=request.user,  # type: ignore[arg-type]
            )
            messages.warning(
                request, f"Token for {client.name} (copy it now, it is not shown again): {raw}"
            )


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("client", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = ("client",)
    readonly_fields = ("client", "prefix", "created_at", "created_by", "last_used_at", "revoked_at")
    exclude = ("token_hash",)
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset:
            services.api_token_revoke(token=token, actor=_actor(request))
        messages.success(request, f"Revoked {queryset.count()} token(s).")


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ("at", "actor", "action", "target_type", "target")
    list_filter = ("action", "target_type")
    search_fields = ("actor", "target")
    readonly_fields = ("at", "actor", "action", "target_type", "target", "payload")
