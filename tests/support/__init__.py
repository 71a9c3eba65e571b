"""Helpers for the tests."""

import pytest

# Their assertions compare whole states: rewritten, a failure shows what differs.
pytest.register_assert_rewrite("tests.support.unchanged")
