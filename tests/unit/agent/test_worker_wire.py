"""The memory worker child's line protocol (app/agent/memory_bridge/worker_wire.py): every message
is one JSON line that decodes to itself, a line that is no message is None and said in the log, and
the child and the app speak it only through the wire module (no second parser on either end)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.agent.memory_bridge.worker_wire import (
    ModeMsg,
    OutcomeMsg,
    UsageMsg,
    WakeMsg,
    WroteMsg,
    decode,
    encode,
    outcome_msg,
)
from app.agent.model.provider import Usage
from memory.constants import Action, Level, MemoryMode
from memory.events import JobApplied, JobHeld, JobStarted
from memory.model import AppliedOp

ROOT = Path(__file__).resolve().parents[3]
ENDS = ("app/cli/memory/worker.py", "app/agent/memory_bridge/worker_process.py")

MESSAGES = [
    UsageMsg.of("claude-haiku", Usage(input_tokens=5, output_tokens=2, cache_read_input_tokens=7)),
    WroteMsg.of("/w/.PseudoClaude/memory/a.md", "ab" * 32),
    WroteMsg.of("/w/.PseudoClaude/memory/gone.md", None),
    WroteMsg.of("/w/caf\udce9/.PseudoClaude/memory/a.md", "cd"),  # a folder's name that is not UTF-8
    OutcomeMsg(
        event=JobApplied(
            job_id="j1",
            txid="t1",
            applied=(AppliedOp(index=0, action=Action.CREATE, level=Level.USER, filename="u.md", title="U"),),
        )
    ),
    OutcomeMsg(event=JobHeld(job_id="j2")),
    WakeMsg(),
    ModeMsg(mode=MemoryMode.REVIEW),
]


@pytest.mark.parametrize("msg", MESSAGES, ids=lambda m: m.kind)
def test_every_message_is_one_json_line_that_decodes_to_itself(msg: object) -> None:
    line = encode(msg)  # type: ignore[arg-type]
    assert "\n" not in line and line.startswith("{")
    assert decode(line) == msg
    assert decode(line.encode() + b"\n") == msg


def test_a_written_path_comes_back_as_the_same_path_whatever_its_bytes() -> None:
    for path in ("/w/a.md", "/w/caf\udce9/a.md", "/w/\u00e9t\u00e9/a.md"):
        msg = decode(encode(WroteMsg.of(path, None)))
        assert isinstance(msg, WroteMsg) and msg.file == path


def test_usage_comes_back_as_the_same_usage() -> None:
    usage = Usage(input_tokens=1, output_tokens=2, cache_read_input_tokens=3, cache_creation_input_tokens=4)
    msg = decode(encode(UsageMsg.of("m", usage)))
    assert isinstance(msg, UsageMsg) and (msg.model, msg.usage()) == ("m", usage)


def test_only_a_jobs_outcome_has_an_outcome_line() -> None:
    assert outcome_msg(JobStarted(job_id="j")) is None
    assert outcome_msg(JobHeld(job_id="j")) == OutcomeMsg(event=JobHeld(job_id="j"))


def test_an_unknown_kind_is_none_and_said_in_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    assert decode(b'{"kind": "explode", "path": "x"}') is None
    assert decode(b"   \n") is None  # a blank line: nothing to say
    [said] = [r.getMessage() for r in caplog.records]
    assert said.startswith("memory worker wire: a line ignored") and "\n" not in said


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
    return names


@pytest.mark.parametrize("end", ENDS)
def test_both_ends_speak_only_through_the_wire_module(end: str) -> None:
    imports = _imports(ROOT / end)
    assert "app.agent.memory_bridge.worker_wire" in imports
    assert not imports & {"json", "pydantic"}, "a second parser or writer of the lines"
