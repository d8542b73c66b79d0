"""A 300-turn session in the app, compacted many times: large tool outputs, a 30,000-token
window, and a fake API that refuses an oversized request like the real one. The conversation is
compacted many times and every turn still ends with its answer.

The scripted session (tests/bench/longsession.py) is the one `make bench` measures.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.bench import longsession as ls
from tests.support.fakeapi import FakeAnthropic
from tests.tui.conftest import send, wait_ready, wait_until
from widgets.chat.answer_block import AnswerBlock
from widgets.chat.status import StatusInfo, StatusLine
from widgets.chat.tool_block import ToolBlock
from widgets.dialogs.permission import PermissionModal

TURNS = 300

pytestmark = pytest.mark.timeout(300)


def _screen_text(app: Any) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_a_300_turn_session_runs_to_the_end_in_the_app(make_app, ws: Path) -> None:
    ls.write_data(ws)
    with FakeAnthropic(context_window=ls.WINDOW) as server:
        ls.answer_summaries(server)
        app = make_app(server, memory_mode="off", context_window=ls.WINDOW, offload_bytes=ls.OFFLOAD_BYTES)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_ready(pilot)
            # A shorter chat than the default 300 blocks: the session, the Runner and compaction
            # are what is tested here; Textual's layout of hundreds of blocks only made it slow.
            app.chat.max_blocks = 60
            # Everything the chat and the status line are given over the whole session (old blocks
            # are pruned from the chat, so looking at it at the end would miss an early error).
            errors: list[str] = []
            notes: list[str] = []
            shown: list[StatusInfo] = []
            status = app.query_one(StatusLine)
            add_error, add_note, show = app.chat.add_error, app.chat.add_note, status.show

            def record_error(text: str) -> Any:
                errors.append(text)
                return add_error(text)

            def record_note(text: str) -> Any:
                notes.append(text)
                return add_note(text)

            def record_status(info: StatusInfo) -> None:
                shown.append(info)
                show(info)

            app.chat.add_error = record_error  # type: ignore[method-assign]
            app.chat.add_note = record_note  # type: ignore[method-assign]
            status.show = record_status  # type: ignore[method-assign]

            for turn in range(1, TURNS + 1):
                ls.script_turn(server, turn)
                await send(pilot, ls.prompt(turn))
                if turn == 1:
                    # bash asks once; "2" allows it for the rest of the session.
                    await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the modal")
                    await pilot.press("2")

                def answered(turn: int = turn) -> bool:
                    if app.prompt.disabled_reason is not None:
                        return False  # the turn is still running
                    last = app.chat.blocks[-1] if app.chat.blocks else None
                    return isinstance(last, AnswerBlock) and last.text == ls.answer(turn)

                await wait_until(pilot, answered, timeout=20, what=f"turn {turn}'s answer and its end")
                assert not errors, f"turn {turn}: {errors}"
                assert server.remaining(ls.MODEL) == 0, f"turn {turn} left a scripted reply unused"

            stats = ls.measure(server, Path(os.environ["PSEUDOCLAUDE_HOME"]), TURNS)
            assert not stats.refused, stats.refused[:3]
            assert len(stats.main_sizes) == 2 * TURNS
            assert stats.max_main <= stats.threshold, f"a request of {stats.max_main} tokens"
            assert stats.summary_sizes, "the session never compacted"
            assert max(stats.summary_sizes) <= ls.WINDOW
            # Each compaction was one note in the chat; a summarising one made at least one request.
            summarised = [n for n in notes if n.startswith("compacted ") and "into a summary" in n]
            assert 0 < len(summarised) <= len(stats.summary_sizes), notes[-5:]
            assert any("of tool output kept on disk" in n for n in notes)

            # The status line showed the window filling up towards the threshold and emptying
            # again at each compaction — never past 100 %.
            pcts = [i.context_pct for i in shown if i.context_pct is not None]
            assert pcts and max(pcts) <= 100
            assert max(pcts) >= 70 and min(pcts) < 70

            # The last answer is on screen above the status line, which shows the window's fill.
            await wait_until(
                pilot, lambda: ls.answer(TURNS) in _screen_text(app), what="the last answer drawn"
            )
            assert f"context {pcts[-1]}%" in _screen_text(app).splitlines()[-1]
            tool = app.chat.tool(f"toolu_{TURNS:04d}")
            assert isinstance(tool, ToolBlock) and tool.status == "done"
            assert f"end of turn {TURNS}" in (tool.result_text or "")
        await app.bridge.close(0.0)
