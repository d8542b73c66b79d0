"""Tool inputs as pydantic models: the JSON schemas the model is sent (pinned to the byte) and the
one-line reasons a wrong input gets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from app.agent.tools import BUILTIN_TOOLS, ToolError, api_tools
from app.agent.tools.base import ToolInput, parse_input
from app.agent.tools.builtin.bash import BashInput
from app.agent.tools.builtin.edit_file import EditFileInput
from app.agent.tools.builtin.grep import GrepInput
from app.agent.tools.builtin.list_files import ListFilesInput
from app.agent.tools.builtin.read_file import ReadFileInput
from app.agent.tools.builtin.read_memory import ReadMemoryInput
from app.agent.tools.builtin.read_result import ReadResultInput
from app.agent.tools.builtin.search_memory import SearchMemoryInput
from app.agent.tools.builtin.task import TaskInput
from app.agent.tools.builtin.write_file import WriteFileInput
from app.agent.tools.schema import input_schema

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
    found = BUILTIN_TOOLS.get(tool)
    assert found is not None
    generated = input_schema(found.Input)
    assert json.dumps(generated, ensure_ascii=False) == json.dumps(pinned, ensure_ascii=False)


def test_a_schema_key_outside_the_contract_fails_loudly_instead_of_being_dropped() -> None:
    class Bounded(ToolInput):
        name: str = Field(max_length=3, description="x")

    with pytest.raises(ValueError, match=r"Bounded\.name: schema keys outside the contract: \['maxLength'\]"):
        input_schema(Bounded)


def _reason(model: type[ToolInput], inp: dict[str, Any]) -> str:
    with pytest.raises(ToolError) as e:
        parse_input(model, inp)
    return str(e.value)


@pytest.mark.parametrize(
    ("model", "inp", "reason"),
    [
        (ReadFileInput, {}, "missing required input 'path'"),
        (ReadFileInput, {"path": None}, "missing required input 'path'"),
        (ReadFileInput, {"path": 3}, "input 'path' must be a string, not an integer"),
        (ReadFileInput, {"path": ""}, "input 'path' must not be empty"),
        (ReadFileInput, {"path": "a", "offset": -1}, "input 'offset' must be at least 0 (got -1)"),
        (ReadFileInput, {"path": "a", "offset": "2"}, "input 'offset' must be an integer, not a string"),
        (ReadFileInput, {"path": "a", "limit": 0}, "input 'limit' must be at least 1 (got 0)"),
        (ReadFileInput, {"path": "a", "limit": 0.0}, "input 'limit' must be at least 1 (got 0)"),
        (ReadFileInput, {"path": "a", "limit": True}, "input 'limit' must be an integer, not a boolean"),
        (ReadFileInput, {"path": "a", "limit": 2.5}, "input 'limit' must be an integer, not a number"),
        # Inputs are checked in the order the tool declares them: the first wrong one is named.
        (ReadFileInput, {"path": 3, "limit": 0}, "input 'path' must be a string, not an integer"),
        (ListFilesInput, {"pattern": 5}, "input 'pattern' must be a string, not an integer"),
        (GrepInput, {"path": "."}, "missing required input 'pattern'"),
        (WriteFileInput, {"path": "a"}, "missing required input 'content'"),
        (
            EditFileInput,
            {"path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"},
            "input 'replace_all' must be true or false, not a string",
        ),
        (BashInput, {"command": ["ls"]}, "input 'command' must be a string, not an array"),
        (BashInput, {"command": "a\x00b"}, "command contains a NUL character"),
        (BashInput, {"command": "\ud800"}, "command is not valid UTF-8 text (it holds a lone surrogate)"),
        (BashInput, {"command": "a\x00b", "timeout": "x"}, "command contains a NUL character"),
        (BashInput, {"command": "true", "timeout": -1}, "input 'timeout' must be greater than 0 (got -1)"),
        (
            BashInput,
            {"command": "true", "timeout": float("inf")},
            "input 'timeout' must be a number, not a number",
        ),
        (
            BashInput,
            {"command": "true", "timeout": True},
            "input 'timeout' must be a number, not a boolean",
        ),
        (SearchMemoryInput, {"query": " \t"}, "input 'query' must name what to look for, not only spaces"),
        (SearchMemoryInput, {"query": "x", "level": ""}, "level must be 'project' or 'user', not ''"),
        (
            SearchMemoryInput,
            {"query": "x", "level": "team", "limit": 0},
            "level must be 'project' or 'user', not 'team'",
        ),
        (SearchMemoryInput, {"query": "x", "limit": 51}, "input 'limit' must be at most 50 (got 51)"),
        (ReadMemoryInput, {"level": ""}, "input 'level' must not be empty"),
        (ReadMemoryInput, {"level": "project"}, "missing required input 'filename'"),
        (
            ReadMemoryInput,
            {"level": "team", "filename": "a.md"},
            "level must be 'project' or 'user', not 'team'",
        ),
        # A malformed input is named before an unknown store.
        (
            ReadMemoryInput,
            {"level": "team", "filename": "a.md", "limit": "5"},
            "input 'limit' must be an integer, not a string",
        ),
        (ReadResultInput, {"id": ""}, "input 'id' must not be empty"),
        (TaskInput, {"description": "x"}, "missing required input 'prompt'"),
    ],
)
def test_a_wrong_input_gets_one_line_naming_it(
    model: type[ToolInput], inp: dict[str, Any], reason: str
) -> None:
    assert _reason(model, inp) == reason


def test_inputs_are_read_as_sent_without_coercion_nulls_absent_and_unknown_keys_ignored() -> None:
    read = parse_input(ReadFileInput, {"path": "a", "offset": 0, "limit": 3.0, "colour": "blue"})
    assert (read.path, read.offset, read.limit) == ("a", 0, 3)
    assert type(read.limit) is int  # a whole float is taken as the integer
    assert parse_input(ReadFileInput, {"path": "a", "offset": None}).offset is None
    edit = parse_input(EditFileInput, {"path": "a", "old_string": "", "new_string": "", "replace_all": None})
    assert (edit.old_string, edit.new_string, edit.replace_all) == ("", "", False)
    bash = parse_input(BashInput, {"command": "ls", "timeout": 5})
    assert bash.timeout == 5.0 and type(bash.timeout) is float
    found = parse_input(SearchMemoryInput, {"query": "frob", "level": "user", "limit": 50})
    assert (found.query, found.level, found.limit) == ("frob", "user", 50)
    assert parse_input(ListFilesInput, {}) == ListFilesInput()


def test_every_tool_reads_its_input_with_the_model_its_schema_comes_from() -> None:
    for tool in BUILTIN_TOOLS:
        name, schema, fields = tool.name, tool.input_schema(), tool.Input.model_fields
        assert isinstance(schema["properties"], dict) and list(schema["properties"]) == list(fields), name
        assert schema["required"] == [k for k, f in fields.items() if f.is_required()], name
