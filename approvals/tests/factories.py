"""Test data for approvals (factory-boy). Rows go straight to the database, without the
audit entries and announcements of ``approvals.services``: tests of those call them."""

from __future__ import annotations

from datetime import timedelta

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from approvals.models import ApprovalRequest, Grant, Status


class ApprovalRequestFactory(DjangoModelFactory[ApprovalRequest]):
    """A pending shell operation of ``data-agent`` in ``ctx-1``, five minutes to its deadline."""

    class Meta:
        model = ApprovalRequest

    class Params:
        command = "pip install pandas"

    context_id = "ctx-1"
    agent_type = "data-agent"
    operation = factory.LazyAttribute(lambda o: {"kind": "shell", "command": o.command})
    kind = "shell"
    normalised = factory.LazyAttribute(lambda o: o.command)
    # What the engine says of a command no rule matches.
    evaluation = factory.LazyAttribute(
        lambda o: {
            "decision": "ask",
            "normalised": o.command,
            "rule": None,
            "sources_entry": None,
            "parts": [
                {
                    "kind": "shell",
                    "text": o.command,
                    "decision": "ask",
                    "rule": None,
                    "sources_entry": None,
                    "reason": "no rule matched",
                }
            ],
        }
    )
    risk = "medium"
    status = Status.PENDING
    requested_by = "api:agent-1"
    deadline = factory.LazyFunction(lambda: timezone.now() + timedelta(minutes=5))


class GrantFactory(DjangoModelFactory[Grant]):
    """An active grant for every context of ``data-agent``, without expiry."""

    class Meta:
        model = Grant

    rule = "shell(pip install pandas:*)"
    scope = Grant.Scope.AGENT_TYPE
    agent_type = "data-agent"
    created_by = "user:test"
