"""A team's limits, each declared once: the name an admin gives it (``manage.py team quota
--live-sandboxes``, the Teams page's form), the ``Team`` column that holds it (added to the
model from here: contextsvc/core/models.py), what the refusal calls it, how it is written
and shown. The command, the form, the audit payload and ``quota_check`` all read these; a
new quota is one declaration here and its check where the thing it limits is made (and a
migration for its column).

No model imports here: the model is built from these declarations."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import models

from contextsvc.quantity import format_bytes, parse_quantity

NO_LIMIT = "none"
# The largest each column holds (PositiveIntegerField; a quantity: PositiveBigIntegerField).
COUNT_MAXIMUM = 2**31 - 1
QUANTITY_MAXIMUM = 2**63 - 1
_UNIT = re.compile(r".*(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)$")


@dataclass(frozen=True)
class Limit:
    """One limit of a team (None on a team: no limit)."""

    # As an admin writes it: the command's --live-sandboxes, the form's field.
    name: str
    # The Team column.
    field: str
    # What a refusal calls what it counts ("… limited to 40 live sandboxes").
    label: str
    # Written with a unit (500Gi) and shown in bytes' units; else a whole number.
    quantity: bool = False
    help: str = ""

    @property
    def maximum(self) -> int:
        return QUANTITY_MAXIMUM if self.quantity else COUNT_MAXIMUM

    def column(self) -> models.Field[Any, Any]:
        kind = models.PositiveBigIntegerField if self.quantity else models.PositiveIntegerField
        return kind(null=True, blank=True)

    def of(self, team: Any) -> int | None:
        value = getattr(team, self.field)
        return None if value is None else int(value)

    def show(self, value: int) -> str:
        return format_bytes(value) if self.quantity else str(value)

    def parse(self, text: str) -> int | None:
        """The limit as an admin writes it: a whole number, or a quantity with its unit
        (500Gi); ``none`` (or nothing) for no limit. ``ValueError`` says what is wrong."""
        text = text.strip()
        if text in ("", NO_LIMIT):
            return None
        try:
            value = parse_quantity(text) if self.quantity else Decimal(int(text))
        except ValueError:
            kind = "a quantity (500Gi)" if self.quantity else "a whole number"
            raise ValueError(f"must be {kind} or {NO_LIMIT!r}") from None
        if value < 0 or value != int(value):
            raise ValueError("must be a whole amount of 0 or more")
        if self.quantity and value and not _UNIT.match(text):
            # 500 is 500 bytes to Kubernetes: as a team's storage, surely a slip.
            raise ValueError(f"needs a unit ({text}Gi, {text}Mi …): {text} alone is {text} bytes")
        if value > self.maximum:
            raise ValueError(f"must be at most {self.show(self.maximum)}")
        return int(value)


LIVE_ALLOCATIONS = Limit("live_allocations", "max_live_allocations", "live allocations")
LIVE_SANDBOXES = Limit("live_sandboxes", "max_live_sandboxes", "live sandboxes")
STORAGE = Limit(
    "storage",
    "max_storage_bytes",
    "of requested storage",
    quantity=True,
    # The sum of the PVCs the service requests for the team: its allocations' workspace
    # and artifacts volumes, its named contexts', its agent workspaces'
    # (teams.storage_in_use; a caller's own existing PVC is not ours, and is not counted).
    help="A quantity, e.g. 500Gi",
)
PENDING_APPROVALS = Limit("pending_approvals", "max_pending_approvals", "pending approval requests")
# Requests of the team's API tokens, a burst of this many and then this many a minute
# (contextsvc/core/ratelimit.py); past it, a 429. The dashboard's people are not counted.
REQUESTS_PER_MINUTE = Limit(
    "requests_per_minute",
    "max_requests_per_minute",
    "requests a minute",
    help="API requests of the team's tokens",
)
LIMITS = (LIVE_ALLOCATIONS, LIVE_SANDBOXES, STORAGE, PENDING_APPROVALS, REQUESTS_PER_MINUTE)


def limits_shown(team: Any) -> str:
    """The team's limits in a line (``live sandboxes 40, storage 500Gi``)."""
    shown = [
        f"{limit.name.replace('_', ' ')} {limit.show(value)}"
        for limit in LIMITS
        if (value := limit.of(team)) is not None
    ]
    return ", ".join(shown) or "no limits"
