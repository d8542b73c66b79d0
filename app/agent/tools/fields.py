"""The field checks of tool inputs: each checks the type itself, in the words of the errors, and
never coerces (``"5"`` is not a number, ``true`` is not 1). A tool's input model builds its fields
from the annotated types here; a bound (``ge``/``le``) also shows in the schema the model is sent."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, ValidationInfo

from app.agent.tools.base import quote

__all__ = [
    "LEVELS",
    "Count",
    "FilledText",
    "Flag",
    "Level",
    "Line",
    "PositiveNumber",
    "Text",
    "filled_text",
    "flag",
    "integer",
    "positive_number",
    "refuse",
    "text",
    "unknown_level",
]

LEVELS = ("project", "user")


def refuse(reason: str) -> ValueError:
    """The error a field check raises: ``reason`` is the whole one-line message."""
    return ValueError(reason)


def text(value: object, info: ValidationInfo) -> str:
    """A string (may be empty)."""
    if not isinstance(value, str):
        raise refuse(f"input {info.field_name!r} must be a string, not {_type_name(value)}")
    return value


def filled_text(value: object, info: ValidationInfo) -> str:
    """A string that is not empty."""
    v = text(value, info)
    if v == "":
        raise refuse(f"input {info.field_name!r} must not be empty")
    return v


def integer(value: object, info: ValidationInfo) -> int:
    """An integer; a whole float (``2.0``) counts as one, a boolean does not. Bounds are the
    field's ``ge``/``le`` (they are in the schema too)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise refuse(f"input {info.field_name!r} must be an integer, not {_type_name(value)}")
    return value


def positive_number(value: object, info: ValidationInfo) -> float:
    """A finite number greater than 0. Checked here rather than by ``gt=0``: the schema states
    no bound for it."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise refuse(f"input {info.field_name!r} must be a number, not {_type_name(value)}")
    if value <= 0:
        raise refuse(f"input {info.field_name!r} must be greater than 0 (got {value:g})")
    return float(value)


def flag(value: object, info: ValidationInfo) -> bool:
    if not isinstance(value, bool):
        raise refuse(f"input {info.field_name!r} must be true or false, not {_type_name(value)}")
    return value


def unknown_level(level: str) -> ValueError:
    return refuse(f"level must be 'project' or 'user', not {quote(level)}")


def _level(value: object, info: ValidationInfo) -> str:
    v = text(value, info)
    if v not in LEVELS:
        raise unknown_level(v)
    return v


def _type_name(v: object) -> str:
    if v is None:
        return "null"
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
    }.get(type(v), type(v).__name__)


Text = Annotated[str, BeforeValidator(text)]
FilledText = Annotated[str, BeforeValidator(filled_text)]
Flag = Annotated[bool, BeforeValidator(flag)]
PositiveNumber = Annotated[float, BeforeValidator(positive_number)]
# A bound sits on the int, before the type check wraps it, so the schema shows it as minimum/maximum.
Count = Annotated[int, Field(ge=1), BeforeValidator(integer)]
# A 1-based line: the schema asks for 1 or more, but 0 is taken as the first line rather than
# refused (models count from 0 now and then).
Line = Annotated[int, Field(ge=0, json_schema_extra={"minimum": 1}), BeforeValidator(integer)]
Level = Annotated[Literal["project", "user"], BeforeValidator(_level)]
