"""The usage app's task by name (beat's: config/settings/base.py)."""

from __future__ import annotations

METER = "usage.tasks.meter"
