"""The Runner is built from a few grouped parts (``RunnerDeps``), and a sub-agent's are its
parent's with the read-only tools, no session, a fresh conversation and a depth one deeper."""

from __future__ import annotations

import inspect
from pathlib import Path

from app.agent.conversation.blocks import Message, TextBlock
from app.agent.memory_bridge.run_memory import RunMemory
from app.agent.model.provider import AnthropicProvider
from app.agent.permissions.gate import Gate
from app.agent.permissions.rules import PermissionRules
from app.agent.tools import BUILTIN_TOOLS, ToolContext
from app.agent.turn.compactor import ContextSettings
from app.agent.turn.deps import ModelSettings, RunnerDeps, ToolSettings
from app.agent.turn.runner import Runner
from app.agent.turn.system_prompt import subagent_system


def _deps(ws: Path) -> RunnerDeps:
    return RunnerDeps(
        model=ModelSettings(AnthropicProvider(), "claude-x", max_tokens=1000, max_iterations=7),
        tools=ToolSettings(
            ToolContext(workspace=ws), Gate(PermissionRules(workspace=ws)), BUILTIN_TOOLS, None, 4096
        ),
        memory=RunMemory(shown_index="the index"),
        context=ContextSettings(window=50_000, compact_at=0.5, offload_bytes=1234),
        conversation=[Message(role="user", content=[TextBlock(text="earlier")])],
    )


def test_a_runner_takes_its_parts_grouped() -> None:
    assert list(inspect.signature(Runner.__init__).parameters) == ["self", "deps"]


def test_a_runner_reads_its_parts(tmp_path: Path) -> None:
    runner = Runner(_deps(tmp_path))
    assert (runner.model, runner.max_tokens, runner.max_iterations) == ("claude-x", 1000, 7)
    assert runner.tool_input_bytes == 4096 and runner.offload_bytes == 1234 and runner.threshold == 25_000
    assert runner.shown_index == "the index" and "the index" in runner.system[-1].text
    assert runner.conversation == [Message(role="user", content=[TextBlock(text="earlier")])]
    assert not runner.is_subagent and runner.session is None


def test_a_subagent_gets_the_read_only_tools_a_fresh_conversation_and_its_parents_memory(
    tmp_path: Path,
) -> None:
    parent = Runner(_deps(tmp_path))
    parent.model = "claude-y"  # chosen mid-session: the sub-agent asks the model of now
    sub = parent.subagent()
    assert sub.is_subagent and sub.depth == 1 and sub.model == "claude-y"
    assert sub.tools.names() == [t.name for t in BUILTIN_TOOLS if t.read_only]
    assert "write_file" not in sub.tools.names() and "task" not in sub.tools.names()
    assert sub.conversation == [] and sub.session is None
    assert sub.system == subagent_system(tmp_path)
    assert sub.memory is parent.memory  # its reads count in the turn's receipt
    assert (sub.tool_input_bytes, sub.offload_bytes, sub.max_iterations) == (4096, 1234, 7)
