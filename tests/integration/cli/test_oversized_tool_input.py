"""A tool call whose input is too large is refused when it arrives, and the session goes on
(the real CLI in print mode, the real SDK, the fake Messages API): the huge field never reaches the
conversation, the session file or the next request, and the file is not written."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.clitools import MODEL, result_text, run_cli, tool_results
from tests.support.fakeapi import FakeAnthropic, Recorded, text, tool_use

pytestmark = pytest.mark.timeout(120)


def _sessions() -> list[Path]:
    return sorted((Path(os.environ["PSEUDOCLAUDE_HOME"]) / "sessions").glob("*.jsonl"))


def _tool_uses(req: Recorded) -> list[dict[str, Any]]:
    return [
        b
        for m in req.body["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    ]


def _size(req: Recorded) -> int:
    return len(json.dumps(req.body["messages"]))


def _refused_then_next_prompt_works(
    server: FakeAnthropic, ws: Path, content_bytes: int, limit: str, *args: str
) -> None:
    server.script(
        MODEL,
        tool_use("write_file", {"path": "big.txt", "content": "x" * content_bytes}, id="toolu_big"),
        text("noted"),
    )
    res = run_cli(server, ws, "-p", "write the big file", "--allow-tools", "write_file", *args)
    assert res.code == 0, res.err
    assert not (ws / "big.txt").exists()  # refused before it ran
    second = server.requests_for(MODEL)[1]
    (call,) = _tool_uses(second)
    assert call["id"] == "toolu_big" and isinstance(call["input"], dict)  # still a valid tool_use
    assert call["input"]["path"] == "big.txt"  # what is small stays as the model wrote it
    assert len(json.dumps(call["input"])) < 1_000
    (result,) = tool_results(second)
    said = result_text(result)
    assert result.get("is_error") and limit in said and f"{content_bytes + 31:,}" in said, said
    assert "tool_input_max_bytes" in said
    assert _size(second) < 50_000
    (session,) = _sessions()
    assert session.stat().st_size < 100_000  # the log never held it either

    server.script(MODEL, text("still here"))
    res = run_cli(server, ws, "-p", "and now?", "--continue", *args)
    assert res.code == 0, res.err
    assert res.out.strip() == "still here"
    assert _size(server.requests_for(MODEL)[2]) < 50_000


def test_a_20_mb_write_file_is_refused_at_the_default_bound_and_the_session_goes_on(
    server: FakeAnthropic, ws: Path
) -> None:
    _refused_then_next_prompt_works(server, ws, 20 * 1024 * 1024, "256.0 KiB", "--memory", "off")


def test_the_bound_is_a_setting_and_an_input_under_it_is_run(server: FakeAnthropic, ws: Path) -> None:
    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("tool_input_max_bytes = 4096\n")
    _refused_then_next_prompt_works(server, ws, 10_000, "4.0 KiB", "--memory", "off")
    server.script(
        MODEL,
        tool_use("write_file", {"path": "small.txt", "content": "y" * 3_000}, id="toolu_small"),
        text("written"),
    )
    res = run_cli(
        server, ws, "-p", "a small one", "--allow-tools", "write_file", "--continue", "--memory", "off"
    )
    assert res.code == 0, res.err
    assert (ws / "small.txt").read_text() == "y" * 3_000
