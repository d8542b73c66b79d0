"""MCP tool names within the API's charset in a stable order; results as text and one-line notes."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from app.agent.extensions.mcp.model import McpTool
from app.agent.extensions.mcp.names import api_name, assign_names
from app.agent.extensions.mcp.results import McpResult, tool_result

pytestmark = pytest.mark.timeout(30)


def test_names_are_sanitized_to_the_api_charset() -> None:
    name = api_name("my.server", "do thing/now")
    assert name == "mcp__my_server__do_thing_now"
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name)


def test_order_is_by_server_then_tool_whatever_order_they_came_in() -> None:
    pairs = [("zeta", "a"), ("alpha", "b"), ("alpha", "a"), ("mid", "x")]
    one, _ = assign_names(pairs)
    two, _ = assign_names(list(reversed(pairs)))
    assert list(one) == list(two) == ["mcp__alpha__a", "mcp__alpha__b", "mcp__mid__x", "mcp__zeta__a"]


def test_a_collision_or_an_overlong_name_is_refused_with_one_line() -> None:
    named, refused = assign_names([("a.b", "t"), ("a_b", "t"), ("s", "x" * 60)])
    assert list(named) == ["mcp__a_b__t"]
    assert named["mcp__a_b__t"] == ("a.b", "t")
    assert len(refused) == 2 and all("\n" not in r for r in refused)
    assert any("is taken by 't' of 'a.b'" in r for r in refused)
    assert any("over 64 characters" in r for r in refused)


def test_api_definition_is_an_object_schema() -> None:
    tool = McpTool("mcp__s__t", "s", "t", "d" * 5000, {"properties": {"x": {"type": "string"}}})
    api = tool.api()
    assert api["input_schema"] == {"type": "object", "properties": {"x": {"type": "string"}}}
    assert len(api["description"]) == 2048 and set(api) == {"name", "description", "input_schema"}


def _block(kind: str, **fields: object) -> SimpleNamespace:
    return SimpleNamespace(type=kind, **fields)


def test_text_is_text_and_other_content_is_a_one_line_note() -> None:
    result = SimpleNamespace(
        is_error=False,
        structured_content=None,
        content=[
            _block("text", text="line one\nline two"),
            _block("image", data="A" * 400, mime_type="image/png"),
            _block("audio", data="A" * 40, mime_type="audio/wav"),
            _block("resource_link", uri="file:///x.txt", name="x"),
            _block("resource", resource=SimpleNamespace(uri="file:///y", text="embedded text")),
            _block(
                "resource",
                resource=SimpleNamespace(uri="file:///z.bin", blob="AAAA", mime_type="application/zip"),
            ),
        ],
    )
    # The text (what a face shows, and the model where an image cannot be prepared): the image
    # is a note in it; the image itself is among the parts (tests/unit/agent/mcp/test_mcp_images.py).
    assert tool_result(result).content == (
        "line one\nline two\n"
        "[image image/png, 300 B: not shown]\n"
        "[audio audio/wav, 30 B: not shown]\n"
        "[resource link file:///x.txt (x)]\n"
        "embedded text\n"
        "[resource file:///z.bin application/zip, 3 B: not shown]"
    )


def test_is_error_is_a_tool_error_and_empty_answers_say_so() -> None:
    err = SimpleNamespace(is_error=True, structured_content=None, content=[_block("text", text="boom")])
    assert tool_result(err) == McpResult("boom", is_error=True)
    silent = SimpleNamespace(is_error=True, structured_content=None, content=[])
    assert tool_result(silent).is_error and "error" in tool_result(silent).content
    structured = SimpleNamespace(is_error=False, structured_content={"n": 1}, content=[])
    assert tool_result(structured) == McpResult('{"n": 1}')
