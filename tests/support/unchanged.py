""" "Nothing changed", checked whole: every row of every model the service keeps (the audit
log among them), to compare before and after a refused action."""

from __future__ import annotations

from typing import Any

from django.apps import apps

# The service's own apps, and the people and groups it manages.
APPS = ("core", "allocations", "workspaces", "approvals", "profiles", "auth")
# Bookkeeping that changes on every call, whatever the call did: when a token or a person
# was last seen, and what the background processes and the cluster last reported.
NOT_STATE = {
    "core.ApiToken": {"last_used_at"},
    "auth.User": {"last_login"},
    "core.ProcessHeartbeat": None,  # None: the whole model
    "core.ClusterCapabilities": None,
}


def rows() -> dict[str, list[dict[str, Any]]]:
    """Every row of every model of ``APPS``, by model, in primary-key order."""
    found: dict[str, list[dict[str, Any]]] = {}
    for label in APPS:
        for model in apps.get_app_config(label).get_models():
            name = model._meta.label
            if name in NOT_STATE and NOT_STATE[name] is None:
                continue
            skipped = NOT_STATE.get(name) or set()
            found[name] = [
                {key: value for key, value in row.items() if key not in skipped}
                for row in model._default_manager.order_by("pk").values()
            ]
    return found
