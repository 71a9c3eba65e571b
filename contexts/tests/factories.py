"""Rows for tests that need a named context in a given state without going through the
API (a request that died before creating its PVC)."""

from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

from contexts.models import ContextResource


class ContextResourceFactory(DjangoModelFactory[ContextResource]):
    class Meta:
        model = ContextResource

    name = factory.Sequence(lambda n: f"context-{n}")
    namespace = "default"
    type = "memory"
    size = "1Gi"
    access_mode = "ReadWriteOnce"
    requester = "api:rossoctl"
