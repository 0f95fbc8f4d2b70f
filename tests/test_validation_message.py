"""A pydantic error reaches the operator without pydantic's ``Value error, `` prefix (issue 25):
every problem line reads its text through :func:`sediment.errors.validation_message`."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError, field_validator

from sediment.errors import validation_message
from sediment.ingest.reading.files import describe_refusal


class _Run(BaseModel):
    run_id: str
    attempt: int = 1

    @field_validator("run_id")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("identifier must not be empty")
        if value == "x":  # what a failed `assert` raises (pytest rewrites asserts in this module)
            raise AssertionError("identifier must not be a placeholder")
        return value


def _error(**fields: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        _Run.model_validate(fields)
    return caught.value


def test_a_validators_message_loses_pydantics_prefix() -> None:
    assert validation_message(_error(run_id="  ").errors()[0]) == "identifier must not be empty"
    assert validation_message(_error(run_id="x").errors()[0]) == "identifier must not be a placeholder"


def test_pydantics_own_messages_are_kept_whole() -> None:
    assert validation_message(_error(run_id="a", attempt="many").errors()[0]) == \
        "Input should be a valid integer, unable to parse string as an integer"
    # Only a leading prefix goes: the same words inside a message stay.
    assert validation_message({"msg": "bad: Value error, kept"}) == "bad: Value error, kept"


def test_a_refused_record_names_the_field_then_the_plain_message() -> None:
    assert describe_refusal(_error(run_id="")) == "run_id: identifier must not be empty"
