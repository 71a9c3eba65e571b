"""Every page and action checks the person's role on the server."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from contextsvc.core.auth import Role, user_role
from contextsvc.core.users import has_role
from contextsvc.infra.errors import error_json

View = Callable[..., HttpResponse]


def wants_json(request: HttpRequest) -> bool:
    """The page's own script (or any client asking for JSON rather than a page): answers
    go in the API's shapes. A browser's navigation always lists text/html."""
    accept = request.headers.get("Accept", "")
    return "application/json" in accept and "text/html" not in accept


def role_required(role: str) -> Callable[[View], View]:
    def decorator(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, role):
                refusal = f"this needs the {role} role"
                if wants_json(request):
                    # The page's own script asked: answer in the API's error shape.
                    return error_json(403, "forbidden", refusal)
                raise PermissionDenied(refusal)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


viewer_required = role_required(Role.VIEWER)
approver_required = role_required(Role.APPROVER)
admin_required = role_required(Role.ADMIN)


def actor(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


def role_context(request: HttpRequest) -> dict[str, Any]:
    """Template context: what the person may see and do (buttons follow it; the server
    checks again on every action)."""
    role = user_role(request.user) if request.user.is_authenticated else None
    return {
        "role": role,
        "can_decide": role is not None and has_role(request.user, Role.APPROVER),
        "is_admin": role == Role.ADMIN,
    }
