from __future__ import annotations

import json

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from contextsvc.infra.errors import ServiceError
from frontend.access import actor, admin_required, viewer_required
from frontend.forms import DocumentUploadForm
from profiles import services
from profiles.forms import SandboxProfileForm
from profiles.models import SandboxProfile
from profiles.validation import DOCUMENTS, Document, DocumentInvalid, normalised_document


def _document(name: str) -> Document:
    if name not in DOCUMENTS:
        raise Http404("settings or sources")
    return DOCUMENTS[name]


@viewer_required
def profile_list(request: HttpRequest) -> HttpResponse:
    return render(
        request, "frontend/profiles.html", {"profiles": SandboxProfile.objects.order_by("name")}
    )


@viewer_required
def profile_detail(request: HttpRequest, name: str) -> HttpResponse:
    profile = get_object_or_404(SandboxProfile, name=name)
    return render(
        request,
        "frontend/profile_detail.html",
        {
            "profile": profile,
            "rules_json": json.dumps(profile.rules, indent=2),
            "sources_json": json.dumps(profile.sources, indent=2),
            "resources_json": json.dumps(profile.resources, indent=2),
            "egress_json": json.dumps(profile.egress, indent=2),
            "ingress_json": json.dumps(profile.ingress, indent=2),
            "upload": DocumentUploadForm(),
        },
    )


@admin_required
def profile_edit(request: HttpRequest, name: str | None = None) -> HttpResponse:
    profile = get_object_or_404(SandboxProfile, name=name) if name else None
    form = SandboxProfileForm(request.POST or None, instance=profile)
    if request.method == "POST" and form.is_valid():
        values = {
            field: form.cleaned_data[field]
            for field in services.FIELDS
            if field in form.cleaned_data
        }
        try:
            saved = services.profile_save(
                name=form.cleaned_data["name"],
                values=values,
                actor=actor(request),
                create=profile is None,
            )
        except ServiceError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"Profile {saved.name} saved.")
            return redirect("frontend:profile", name=saved.name)
    return render(request, "frontend/profile_form.html", {"form": form, "profile": profile})


@viewer_required
def profile_document(request: HttpRequest, name: str, document: str) -> HttpResponse:
    """Export settings.json / sources.json in the seed's form, as a download."""
    profile = get_object_or_404(SandboxProfile, name=name)
    field = _document(document).field
    response = HttpResponse(
        json.dumps(getattr(profile, field), indent=2) + "\n", content_type="application/json"
    )
    response["Content-Disposition"] = f'attachment; filename="{name}-{document}.json"'
    return response


@admin_required
def profile_document_import(request: HttpRequest, name: str, document: str) -> HttpResponse:
    profile = get_object_or_404(SandboxProfile, name=name)
    field = _document(document).field
    form = DocumentUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            content = json.loads(form.cleaned_data["document"].read())
            services.profile_save(
                name=profile.name,
                values={field: normalised_document(document, content)},
                actor=actor(request),
                create=False,
            )
        except (ValueError, DocumentInvalid) as exc:
            messages.error(request, f"{document}.json refused: {exc}")
        except ServiceError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"{document}.json imported.")
    return redirect("frontend:profile", name=profile.name)
