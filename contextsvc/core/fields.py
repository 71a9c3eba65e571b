"""Form fields shared by the Django admin and the dashboard."""

from __future__ import annotations

from typing import Any

from django import forms


class AgentTypesField(forms.CharField):
    """Agent types as one comma-separated line ("weather-service, coder" or "*"); the
    service checks each name."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault(
            "help_text", "For the agent scope: the agent types it may act for, or * for any."
        )
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return ", ".join(value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value)
        return [item.strip() for item in str(text).split(",") if item.strip()]
