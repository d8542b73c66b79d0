"""Tool inputs as pydantic models: the JSON schemas the model is sent (pinned to the byte) and the
one-line reasons a wrong input gets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from app.agent.tools import TOOL_SPECS, ToolError, api_tools
from app.agent.tools import specs as S
from app.agent.tools.base import ToolInput, parse_input

# The schemas as the hand-written dicts gave them, before they were generated from the models.
PINNED = Path(__file__).parent / "data" / "tool_schemas.json"


def test_the_tool_definitions_sent_are_byte_for_byte_the_pinned_ones() -> None:
    assert json.dumps(api_tools(), ensure_ascii=False, indent=1) + "\n" == PINNED.read_text(encoding="utf-8")
    # The compact form the SDK sends keeps the same key order.
    pinned = json.loads(PINNED.read_text(encoding="utf-8"))
    assert json.dumps(api_tools(), separators=(",", ":")) == json.dumps(pinned, separators=(",", ":"))


@pytest.mark.parametrize("tool", [t["name"] for t in json.loads(PINNED.read_text(encoding="utf-8"))])
def test_each_tools_generated_schema_is_the_pinned_one(tool: str) -> None:
    pinned = {t["name"]: t["input_schema"] for t in json.loads(PINNED.read_text(encoding="utf-8"))}[tool]
    generated = S.input_schema(TOOL_SPECS[tool].input)
    assert json.dumps(generated, ensure_ascii=False) == json.dumps(pinned, ensure_ascii=False)


def test_a_schema_key_outside_the_contract_fails_loudly_instead_of_being_dropped() -> None:
    class Bounded(ToolInput):
        name: str = Field(max_length=3, description="x")

    with pytest.raises(ValueError, match=r"Bounded\.name: schema keys outside the contract: \['maxLength'\]"):
        S.input_schema(Bounded)


def _reason(model: type[ToolInput], inp: dict[str, Any]) -> str:
    with pytest.raises(ToolError) as e:
        parse_input(model, inp)
    return str(e.value)


@pytest.mark.parametrize(
    ("model", "inp", "reason"),
    [
        (S.ReadFileInput, {}, "missing required input 'path'"),
        (S.ReadFileInput, {"path": None}, "missing required input 'path'"),
        (S.ReadFileInput, {"path": 3}, "input 'path' must be a string, not an integer"),
        (S.ReadFileInput, {"path": ""}, "input 'path' must not be empty"),
        (S.ReadFileInput, {"path": "a", "offset": -1}, "input 'offset' must be at least 0 (got -1)"),
        (S.ReadFileInput, {"path": "a", "offset": "2"}, "input 'offset' must be an integer, not a string"),
        (S.ReadFileInput, {"path": "a", "limit": 0}, "input 'limit' must be at least 1 (got 0)"),
        (S.ReadFileInput, {"path": "a", "limit": 0.0}, "input 'limit' must be at least 1 (got 0)"),
        (S.ReadFileInput, {"path": "a", "limit": True}, "input 'limit' must be an integer, not a boolean"),
        (S.ReadFileInput, {"path": "a", "limit": 2.5}, "input 'limit' must be an integer, not a number"),
        # Inputs are checked in the order the tool declares them: the first wrong one is named.
        (S.ReadFileInput, {"path": 3, "limit": 0}, "input 'path' must be a string, not an integer"),
        (S.ListFilesInput, {"pattern": 5}, "input 'pattern' must be a string, not an integer"),
        (S.GrepInput, {"path": "."}, "missing required input 'pattern'"),
        (S.WriteFileInput, {"path": "a"}, "missing required input 'content'"),
        (
            S.EditFileInput,
            {"path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"},
            "input 'replace_all' must be true or false, not a string",
        ),
        (S.BashInput, {"command": ["ls"]}, "input 'command' must be a string, not an array"),
        (S.BashInput, {"command": "a\x00b"}, "command contains a NUL character"),
        (S.BashInput, {"command": "\ud800"}, "command is not valid UTF-8 text (it holds a lone surrogate)"),
        (S.BashInput, {"command": "a\x00b", "timeout": "x"}, "command contains a NUL character"),
        (S.BashInput, {"command": "true", "timeout": -1}, "input 'timeout' must be greater than 0 (got -1)"),
        (
            S.BashInput,
            {"command": "true", "timeout": float("inf")},
            "input 'timeout' must be a number, not a number",
        ),
        (
            S.BashInput,
            {"command": "true", "timeout": True},
            "input 'timeout' must be a number, not a boolean",
        ),
        (S.SearchMemoryInput, {"query": " \t"}, "input 'query' must name what to look for, not only spaces"),
        (S.SearchMemoryInput, {"query": "x", "level": ""}, "level must be 'project' or 'user', not ''"),
        (
            S.SearchMemoryInput,
            {"query": "x", "level": "team", "limit": 0},
            "level must be 'project' or 'user', not 'team'",
        ),
        (S.SearchMemoryInput, {"query": "x", "limit": 51}, "input 'limit' must be at most 50 (got 51)"),
        (S.ReadMemoryInput, {"level": ""}, "input 'level' must not be empty"),
        (S.ReadMemoryInput, {"level": "project"}, "missing required input 'filename'"),
        (
            S.ReadMemoryInput,
            {"level": "team", "filename": "a.md"},
            "level must be 'project' or 'user', not 'team'",
        ),
        # A malformed input is named before an unknown store.
        (
            S.ReadMemoryInput,
            {"level": "team", "filename": "a.md", "limit": "5"},
            "input 'limit' must be an integer, not a string",
        ),
        (S.ReadResultInput, {"id": ""}, "input 'id' must not be empty"),
        (S.TaskInput, {"description": "x"}, "missing required input 'prompt'"),
    ],
)
def test_a_wrong_input_gets_one_line_naming_it(
    model: type[ToolInput], inp: dict[str, Any], reason: str
) -> None:
    assert _reason(model, inp) == reason


def test_inputs_are_read_as_sent_without_coercion_nulls_absent_and_unknown_keys_ignored() -> None:
    read = parse_input(S.ReadFileInput, {"path": "a", "offset": 0, "limit": 3.0, "colour": "blue"})
    assert (read.path, read.offset, read.limit) == ("a", 0, 3)
    assert type(read.limit) is int  # a whole float is taken as the integer
    assert parse_input(S.ReadFileInput, {"path": "a", "offset": None}).offset is None
    edit = parse_input(
        S.EditFileInput, {"path": "a", "old_string": "", "new_string": "", "replace_all": None}
    )
    assert (edit.old_string, edit.new_string, edit.replace_all) == ("", "", False)
    bash = parse_input(S.BashInput, {"command": "ls", "timeout": 5})
    assert bash.timeout == 5.0 and type(bash.timeout) is float
    found = parse_input(S.SearchMemoryInput, {"query": "frob", "level": "user", "limit": 50})
    assert (found.query, found.level, found.limit) == ("frob", "user", 50)
    assert parse_input(S.ListFilesInput, {}) == S.ListFilesInput()


def test_every_tool_reads_its_input_with_the_model_its_schema_comes_from() -> None:
    for name, spec in TOOL_SPECS.items():
        schema = spec.input_schema
        assert list(schema["properties"]) == list(spec.input.model_fields), name
        assert schema["required"] == [k for k, f in spec.input.model_fields.items() if f.is_required()], name
