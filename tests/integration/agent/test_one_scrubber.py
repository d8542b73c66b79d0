"""One text scrubber: lone surrogates (undecodable bytes) are replaced by U+FFFD by one function
(``app.agent.conversation.blocks.scrub_text``), applied once to a tool result, before the result
reaches the model, the session file or the screen."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.agent.config.settings import load_settings
from app.agent.conversation import blocks
from app.agent.conversation.blocks import ToolResultBlock
from app.agent.runtime import Runtime
from memory.model import MemoryText
from tests.support.clitools import MODEL
from tests.support.fakeapi import FakeAnthropic, text, tool_use

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]

ROOT = Path(__file__).resolve().parents[3]
# A character class of the surrogate range, however it is spelled in a source file.
SURROGATE_CLASS = re.compile(r"\\ud800-\\udfff|\\uD800-\\uDFFF|\\U0000d800-\\U0000dfff")


def test_one_function_replaces_lone_surrogates() -> None:
    found = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "app").rglob("*.py")
        if SURROGATE_CLASS.search(p.read_text(encoding="utf-8"))
    )
    assert found == ["app/agent/conversation/blocks.py"]
    defined = [p for p in (ROOT / "app").rglob("*.py") if "def clean_text" in p.read_text(encoding="utf-8")]
    assert defined == []


async def test_a_tool_result_is_scrubbed_once_and_reaches_the_model_scrubbed(
    server: FakeAnthropic, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = Runtime(load_settings({"memory_mode": "off"}), ws)
    await rt.open_session()
    try:
        monkeypatch.setattr(
            rt.stores, "read_memory_text", lambda level, filename: MemoryText("MARK-7 \udcff end\n")
        )
        scrubbed: list[str] = []
        real = blocks._SURROGATE

        class Watching:
            """The scrubber's pattern, noting each text of the tool result it is asked about."""

            def search(self, value: str) -> re.Match[str] | None:
                if "MARK-7" in value:
                    scrubbed.append(value)
                return real.search(value)

            def sub(self, repl: str, value: str) -> str:
                return real.sub(repl, value)

        monkeypatch.setattr(blocks, "_SURROGATE", Watching())
        server.script(
            MODEL, tool_use("read_memory", {"level": "project", "filename": "project_a.md"}), text("Read it.")
        )
        stop = await rt.runner.run("what does the note say?")
        assert stop.status == "completed", stop.message
        assert len(scrubbed) == 1, scrubbed
        [result] = rt.runner.conversation[2].tool_results()
        assert isinstance(result, ToolResultBlock) and "MARK-7 \ufffd end" in result.text
        sent = server.requests_for(MODEL)[1].body["messages"][2]["content"][0]["content"]
        assert "MARK-7 \ufffd end" in sent
    finally:
        await rt.close()
