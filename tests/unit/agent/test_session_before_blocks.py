"""A session file written before the conversation was typed content blocks still loads, goes on
and replays to the same conversation. The fixture (data/session_before_blocks.jsonl) was written by
that version's ``Session``: a turn with a tool call and its answer, a cancelled turn, a turn whose
text content is a str, a failed turn dropped from the conversation, an offloaded result, a
compaction boundary, and a last turn cut by a crash."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.agent.conversation.blocks import Message, TextBlock, ToolResultBlock, ToolUseBlock
from app.agent.conversation.compaction import STUB_PREFIX
from app.agent.conversation.messages import INTERRUPTED, app_note
from app.agent.conversation.session_log import CompactionMark
from app.agent.conversation.session_store import SessionStore
from app.agent.undo.rewind import list_turns

pytestmark = pytest.mark.plain_ws

FIXTURE = Path(__file__).parent / "data" / "session_before_blocks.jsonl"
SESSION = "20261207T212459Z-789659"


def user(*blocks: TextBlock | ToolResultBlock) -> Message:
    return Message(role="user", content=list(blocks))


def asst(*blocks: TextBlock | ToolUseBlock) -> Message:
    return Message(role="assistant", content=list(blocks))


def interrupted(call: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=call, content=INTERRUPTED, is_error=True)


@pytest.fixture
def store(isolated_home: Path) -> SessionStore:
    sessions = SessionStore()
    sessions.dir.mkdir(parents=True, mode=0o700)
    shutil.copyfile(FIXTURE, sessions.dir / f"{SESSION}.jsonl")
    return sessions


def test_an_old_session_file_loads_to_the_typed_conversation(store: SessionStore) -> None:
    with store.open(SESSION) as s:
        assert s.messages == [
            user(TextBlock(text="run the tests")),
            asst(ToolUseBlock(id="toolu_02", name="bash", input={"command": "make test"})),
            user(
                interrupted("toolu_02"),
                app_note("this turn was interrupted by the app (the user cancelled it)"),
                TextBlock(text="thanks caf\u00e9 \ufffd"),
            ),
            asst(TextBlock(text="You're welcome.")),
            user(TextBlock(text="read the README")),
            asst(ToolUseBlock(id="toolu_03", name="read_file", input={"path": "README.md"})),
            user(
                interrupted("toolu_03"),
                app_note("this turn was interrupted by the app (PseudoClaude stopped before the turn ended)"),
            ),
        ]
        assert (s.turns, s.title, s.model, s.compactions) == (5, "list the files", "claude-sonnet-4-5", 1)
        assert s.summary == "Turn one listed 400 files." and s.anchor is None
        assert [w.split(": ", 1)[1] for w in s.warnings] == [
            "1 tool call(s) without a result marked [interrupted]",
            "turn 5 was cut short (PseudoClaude stopped before the turn ended); closed it",
        ]
        # The part before the boundary is there to read: turn one, its result offloaded to disk.
        *earlier, mark = s.earlier
        assert mark == CompactionMark(time="2026-12-07T21:24:59Z", summarised=4)
        assert [m.role for m in earlier] == ["user", "assistant", "user", "assistant"]
        [result] = earlier[2].tool_results()
        assert isinstance(result.content, str) and result.content.startswith(STUB_PREFIX)
        assert earlier[0].content[0] == TextBlock(
            text="<memory-update>\n+ - [Build](project_build.md) — make build\n</memory-update>"
        )


def test_an_old_session_file_goes_on_and_replays_to_the_same_conversation(store: SessionStore) -> None:
    with store.open(SESSION) as s:
        s.begin_turn("and now?")
        s.append(user(TextBlock(text="and now?")))
        s.append(asst(TextBlock(text="Now it works.")))
        s.end_turn("completed", memory={"shown": [], "read": [], "stale": []})
        live = [m.model_copy(deep=True) for m in s.messages]
        path = s.path
    with store.open(SESSION) as again:
        assert again.messages == live and again.warnings == [] and again.turns == 6
    # The records the old version wrote read as the turns they were.
    turns = list_turns(path, None)
    assert [(t.turn, t.status, t.job) for t in turns] == [
        (1, "completed", "j-0001"),
        (2, "cancelled", None),
        (3, "completed", None),
        (4, "error", None),
        (5, "crashed", None),
        (6, "completed", None),
    ]
    assert [t.in_conversation for t in turns] == [True, True, True, False, True, True]
    # The new lines are the same record format: one JSON object a line, type first, ASCII only.
    lines = path.read_bytes().splitlines()
    assert all(b < 0x80 for b in path.read_bytes())
    new = [json.loads(line) for line in lines[len(FIXTURE.read_bytes().splitlines()) :]]
    assert [r["type"] for r in new] == [
        "message",
        "message",
        "turn_end",
        "turn_start",
        "message",
        "message",
        "turn_end",
    ]
    assert new[4]["message"] == {"role": "user", "content": [{"type": "text", "text": "and now?"}]}
