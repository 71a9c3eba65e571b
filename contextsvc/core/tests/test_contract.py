"""The request declarations: the parser holds a value to what the document says of it."""

from __future__ import annotations

import pytest

from contextsvc.infra.contract import Body, Field, Query
from contextsvc.infra.errors import InvalidRequest

NAME = Field("name", required=True, schema={"pattern": "^[a-z]+$"}, message="bad name")
SIZE = Field.between("size", 1, 10)
PAIR = Body("Pair", (NAME, SIZE), exclusive=(("name", "size", "one of them"),))


@pytest.mark.parametrize("value", ["abc\n", "ABC", ""])
def test_a_pattern_is_held_as_json_schema_reads_it(value: str) -> None:
    # $ is the end of the string, not "before a final newline" as in Python.
    with pytest.raises(InvalidRequest, match="bad name"):
        NAME.check(value)


def test_bounds_and_their_message() -> None:
    assert SIZE.check(10) == 10
    with pytest.raises(InvalidRequest, match=r"^size must be between 1 and 10$"):
        SIZE.check(11)


def test_decoding_names_the_first_unknown_field_then_checks_types_in_order() -> None:
    with pytest.raises(InvalidRequest, match='unknown field "extra"'):
        PAIR.decode({"size": "x", "extra": 1})
    with pytest.raises(InvalidRequest, match=r"^name must be a string$"):
        PAIR.decode({"size": "x", "name": 1})
    assert PAIR.decode({"size": 2.0}) == {"name": None, "size": 2}  # JSON Schema's integer


def test_a_v1_integer_refuses_a_whole_float() -> None:
    strict = Body("Strict", (SIZE.but(whole_floats=False),))
    with pytest.raises(InvalidRequest, match=r"^size must be an integer$"):
        strict.decode({"size": 2.0})


def test_the_document_closes_the_object_and_states_the_exclusive_pair() -> None:
    keywords = PAIR.document_keywords()
    assert keywords["additionalProperties"] is False
    assert keywords["not"] == {
        "anyOf": [
            {
                "required": ["name", "size"],
                "properties": {
                    "name": {"not": {"type": "null"}},
                    "size": {"not": {"type": "null"}},
                },
            }
        ]
    }


def test_a_boolean_query_takes_only_the_words_it_knows() -> None:
    active = Query("active", bool)
    assert active.read({"active": "yes"}) is True
    assert active.read({}, False) is False
    with pytest.raises(InvalidRequest, match="active must be true or false"):
        active.read({"active": "null"})
