"""Images in the conversation, in print mode end to end (the real CLI, the real SDK, the fake
Messages API, a real stdio MCP server): ``read_file`` of an image and an MCP tool's image reach
the next request as image blocks the API takes, scaled to at most 1568 px; the session keeps each
image once beside its log and ``--continue`` sends it again; a missing image file is a note, not
a failed resume; a rewind removes its turns' images; the memory model never gets an image."""

from __future__ import annotations

import base64
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.support.clitools import MEMORY_MODEL, MODEL, extraction_prompt, run_cli, tool_results
from tests.support.fakeapi import FakeAnthropic, text, tool_use

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[3]
SERVER = str(ROOT / "tests" / "support" / "mcp_server.py")


def png(w: int, h: int, color: tuple[int, int, int] = (20, 90, 200)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (w, h), color).save(out, "PNG")
    return out.getvalue()


def images_in(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every image block of a request's messages (prompts' and tool results'), in order."""
    found: list[dict[str, Any]] = []
    for m in body["messages"]:
        for b in m["content"] if isinstance(m["content"], list) else []:
            inner = b["content"] if b.get("type") == "tool_result" and isinstance(b["content"], list) else [b]
            found += [c for c in inner if c.get("type") == "image"]
    return found


def decoded_size(image: dict[str, Any]) -> tuple[int, int]:
    # Exactly what the API takes: no name or size of ours beside it.
    assert set(image) == {"type", "source"}
    assert set(image["source"]) == {"type", "media_type", "data"} and image["source"]["type"] == "base64"
    with Image.open(io.BytesIO(base64.b64decode(image["source"]["data"]))) as seen:
        return seen.size


def session_files() -> tuple[Path, Path]:
    [log] = (Path(os.environ["PSEUDOCLAUDE_HOME"]) / "sessions").glob("*.jsonl")
    return log, log.with_suffix(".images")


def test_read_file_of_an_image_is_sent_scaled_kept_once_and_sent_again_on_continue(
    server: FakeAnthropic, ws: Path
) -> None:
    (ws / "big.png").write_bytes(png(4000, 3000))
    (ws / "small.png").write_bytes(png(30, 20, (250, 250, 0)))
    server.script(MODEL, tool_use("read_file", {"path": "big.png"}), text("The layout is blue."))
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "what does big.png show?")
    assert res.code == 0, res.err
    [result] = tool_results(server.requests_for(MODEL)[1])
    assert [c["type"] for c in result["content"]] == ["text", "image"]
    assert result["content"][0]["text"] == "[Image #1: big.png 1568×1176] (scaled from 4000×3000)"
    [image] = images_in(server.requests_for(MODEL)[1].body)
    assert decoded_size(image) == (1568, 1176)
    data = image["source"]["data"]
    # The memory model gets no image and no base64.
    assert data[:200] not in json.dumps(server.requests_for(MEMORY_MODEL)[-1].body)
    log, folder = session_files()
    assert data[:200] not in log.read_text() and len(list(folder.iterdir())) == 1

    # A second turn reads the same image again and another: one file per distinct image.
    server.script(
        MODEL,
        tool_use("read_file", {"path": "big.png"}, id="toolu_a"),
        tool_use("read_file", {"path": "small.png"}, id="toolu_b"),
        text("Both seen."),
    )
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "--continue", "-p", "and both?")
    assert res.code == 0, res.err
    first = server.requests_for(MODEL)[2].body
    assert [i["source"]["data"] for i in images_in(first)] == [data]  # sent again from the session's file
    sizes = [decoded_size(i) for i in images_in(server.requests_for(MODEL)[-1].body)]
    assert sizes == [(1568, 1176), (1568, 1176), (30, 20)]
    assert len(list(folder.iterdir())) == 2 and data[:200] not in log.read_text()


def test_a_missing_image_file_is_a_note_on_continue_and_the_turn_goes_on(
    server: FakeAnthropic, ws: Path
) -> None:
    (ws / "shot.png").write_bytes(png(64, 48))
    server.script(MODEL, tool_use("read_file", {"path": "shot.png"}), text("Seen."))
    assert run_cli(server, ws, "-p", "look", "--memory", "off").code == 0
    _, folder = session_files()
    for f in folder.iterdir():
        f.unlink()
    server.script(MODEL, text("Noted."))
    res = run_cli(server, ws, "--continue", "-p", "still there?", "--memory", "off")
    assert res.code == 0, res.err
    assert res.err.count("no longer kept") == 1, res.err
    body = server.requests_for(MODEL)[-1].body
    assert images_in(body) == []
    assert "[image shot.png: no longer kept]" in json.dumps(body, ensure_ascii=False)


def test_an_mcp_tools_image_reaches_the_next_request_as_an_image(server: FakeAnthropic, ws: Path) -> None:
    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f"[mcp_servers.demo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
    )
    server.script(MODEL, tool_use("mcp__demo__picture", {}, id="toolu_p"), text("A dot."))
    res = run_cli(server, ws, "-p", "show me", "--allow-tools", "mcp__demo", "--memory", "off")
    assert res.code == 0, res.err
    [result] = tool_results(server.requests_for(MODEL)[1])
    assert [c["type"] for c in result["content"]] == ["text", "image"]
    assert result["content"][0]["text"] == "a picture:\n[Image #1: mcp image 1 1×1]"
    assert decoded_size(result["content"][1]) == (1, 1)


def test_a_rewind_removes_the_images_of_the_turns_it_rewinds(server: FakeAnthropic, ws: Path) -> None:
    (ws / "a.png").write_bytes(png(40, 40, (255, 0, 0)))
    (ws / "b.png").write_bytes(png(40, 40, (0, 255, 0)))
    server.script(MODEL, tool_use("read_file", {"path": "a.png"}), text("Red."))
    assert run_cli(server, ws, "-p", "look at a", "--memory", "off").code == 0
    server.script(MODEL, tool_use("read_file", {"path": "b.png"}), text("Green."))
    assert run_cli(server, ws, "--continue", "-p", "look at b", "--memory", "off").code == 0
    _, folder = session_files()
    assert len(list(folder.iterdir())) == 2
    a_data = images_in(server.requests_for(MODEL)[1].body)[0]["source"]["data"]

    res = run_cli(None, ws, "rewind", "2", "--conversation")
    assert res.code == 0, res.err
    [kept] = folder.iterdir()
    assert base64.b64encode(kept.read_bytes()).decode() == a_data
    server.script(MODEL, text("Only red."))
    res = run_cli(server, ws, "--continue", "-p", "what is left?", "--memory", "off")
    assert res.code == 0, res.err
    assert "no longer kept" not in res.err
    assert [i["source"]["data"] for i in images_in(server.requests_for(MODEL)[-1].body)] == [a_data]


def test_the_memory_model_sees_a_prompts_image_by_its_name_only(server: FakeAnthropic, ws: Path) -> None:
    (ws / "shot.png").write_bytes(png(300, 200))
    server.script(MODEL, text("The button is cut off."))
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "what is wrong here @shot.png")
    assert res.code == 0, res.err
    [image] = images_in(server.requests_for(MODEL)[0].body)
    assert decoded_size(image) == (300, 200)
    extraction = server.requests_for(MEMORY_MODEL)[-1]
    prompt = extraction_prompt(extraction)
    assert "[image: shot.png]" in prompt and "[Image #1" not in prompt
    assert image["source"]["data"][:100] not in json.dumps(extraction.body)
