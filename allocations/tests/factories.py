"""Rows for tests that need an allocation in a given state without going through the API
(a race's aftermath, history for the metrics)."""

from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

from allocations.models import Allocation, Strategy


class AllocationFactory(DjangoModelFactory[Allocation]):
    class Meta:
        model = Allocation

    name = factory.Sequence(lambda n: f"pool-{n}")
    namespace = "default"
    replicas = 1
    strategy = Strategy.SHARED
    workspace_size = "1Gi"
    workspace_access_mode = "ReadWriteMany"
    requester = "user:test"
