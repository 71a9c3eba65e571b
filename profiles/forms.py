"""The profile form, shared by the Django admin and the dashboard: it checks a profile
exactly as the service will before saving (profiles.services.profile_problems)."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from contextsvc.core import capabilities
from profiles import services
from profiles.models import SandboxProfile


class PrettyJSONField(forms.JSONField):
    """JSON shown indented in a textarea sized to it, not on one line."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, indent=2, ensure_ascii=False)


class SandboxProfileForm(forms.ModelForm):
    # "namespace/name" of a SandboxTemplate the cluster has (what capabilities detected);
    # it sets template_namespace and template_name.
    template = forms.ChoiceField(
        required=False,
        label="SandboxTemplate",
        help_text="For a template profile: its pod template is copied at allocation time.",
    )

    class Meta:
        model = SandboxProfile
        fields = ("name", *services.FIELDS)
        field_classes = dict.fromkeys(services.JSON_FIELDS, PrettyJSONField)
        widgets = {name: forms.Textarea(attrs={"rows": 4}) for name in services.JSON_FIELDS}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        known = list(capabilities.current().template_list)
        current = ""
        if self.instance.template_name:
            current = f"{self.instance.template_namespace}/{self.instance.template_name}"
            if current not in known:
                known.append(current)  # still offered, although the cluster lost it
        choice_field = self.fields["template"]
        assert isinstance(choice_field, forms.ChoiceField)
        choice_field.choices = [("", "—")] + [(item, item) for item in sorted(known)]
        self.fields["template"].initial = current
        for hidden in ("template_namespace", "template_name"):
            self.fields[hidden].widget = forms.HiddenInput()
        for name in services.JSON_FIELDS:
            value = getattr(self.instance, name, None)
            if value:
                lines = json.dumps(value, indent=2).count("\n") + 1
                self.fields[name].widget.attrs["rows"] = min(max(lines, 3), 20)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        picked = cleaned.get("template") or ""
        if picked:
            cleaned["template_namespace"], _, cleaned["template_name"] = picked.partition("/")
        candidate = SandboxProfile(
            **{
                field.name: cleaned.get(field.name, getattr(self.instance, field.name))
                for field in SandboxProfile._meta.concrete_fields
                if field.name not in ("id", "created_at", "updated_at")
            }
        )
        for field, messages in services.profile_problems(candidate).items():
            target = {"template_namespace": "template", "template_name": "template"}.get(
                field, field
            )
            target_field = target if target in self.fields else None
            for message in messages:
                self.add_error(target_field, message if target_field else f"{field}: {message}")
        return cleaned
