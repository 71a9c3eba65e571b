from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from contextsvc.core.selectors import heartbeat_list_recent


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    return render(request, "frontend/overview.html", {"heartbeats": heartbeat_list_recent()})
