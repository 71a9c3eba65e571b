"""The seed's policy (fixtures/settings.json and sources.json), parsed once per module."""

from __future__ import annotations

import pytest

from rules import RuleSet, Sources, parse_settings, parse_sources
from rules.tests.policies import seed_settings, seed_sources


@pytest.fixture(scope="module")
def rules() -> RuleSet:
    return parse_settings(seed_settings())


@pytest.fixture(scope="module")
def sources() -> Sources:
    return parse_sources(seed_sources())
