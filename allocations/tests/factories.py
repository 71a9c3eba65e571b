"""Rows for tests that need an allocation or a named context in a given state without
going through the API (a race's aftermath, history for the metrics)."""

from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

from allocations.models import Allocation, ContextResource, Strategy


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


class ContextResourceFactory(DjangoModelFactory[ContextResource]):
    class Meta:
        model = ContextResource

    name = factory.Sequence(lambda n: f"context-{n}")
    namespace = "default"
    type = "memory"
    size = "1Gi"
    access_mode = "ReadWriteOnce"
    requester = "api:rossoctl"
