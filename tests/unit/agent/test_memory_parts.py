"""The memory model's client and the job manager are each built in one place
(app/agent/memory_bridge/manager.py), with the settings every face shares."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.agent.config.settings import Settings
from app.agent.memory_bridge import manager as memory_parts
from app.agent.memory_bridge.completion import AnthropicCompletion
from app.agent.model.provider import Usage
from memory.constants import MemoryMode
from memory.jobs import pipeline
from memory.store.fs import FS
from memory.store.stores import MemoryStores

ROOT = Path(__file__).resolve().parents[3]
BUILT_IN_ONE_PLACE = frozenset({"Manager", "AnthropicCompletion"})
THE_PLACE = "app/agent/memory_bridge/manager.py"


def _constructions(source: str) -> list[tuple[int, str]]:
    """Each call of ``Manager(...)``/``AnthropicCompletion(...)`` (as a name or an attribute), and
    each import that renames one (a call under another name would escape the first check)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in BUILT_IN_ONE_PLACE:
                found.append((node.lineno, name))
        elif isinstance(node, ast.ImportFrom):
            found += [
                (node.lineno, f"{a.name} as {a.asname}")
                for a in node.names
                if a.name in BUILT_IN_ONE_PLACE and a.asname not in (None, a.name)
            ]
    return found


def test_the_manager_and_the_memory_model_are_built_only_in_memory_parts() -> None:
    elsewhere = {}
    for path in sorted((ROOT / "app").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        found = _constructions(path.read_text(encoding="utf-8"))
        if found and rel != THE_PLACE:
            elsewhere[rel] = found
    assert not elsewhere, f"built outside {THE_PLACE} (call its builders instead): {elsewhere}"
    assert {
        name for _, name in _constructions((ROOT / THE_PLACE).read_text(encoding="utf-8"))
    } == BUILT_IN_ONE_PLACE


def test_the_check_sees_a_construction_under_any_spelling() -> None:
    assert [
        n for _, n in _constructions("m = Manager(s, None)\nc = memory_model.AnthropicCompletion('x')\n")
    ] == ["Manager", "AnthropicCompletion"]
    assert _constructions("from memory.jobs.manager import Manager as M\n") == [(1, "Manager as M")]
    assert _constructions("from memory.jobs.manager import Manager\nx: Manager\n") == []


def test_the_memory_model_gets_the_settings_and_the_callers_hooks(tmp_path: Path) -> None:
    def on_usage(model: str, usage: Usage) -> None:
        pass

    def share() -> object:
        return None

    c = memory_parts.memory_completion(
        Settings(memory_model="claude-x", memory_idle_timeout=7.5),
        home=tmp_path,
        on_usage=on_usage,
        share=share,
    )
    assert isinstance(c, AnthropicCompletion)
    assert (c.model, c.idle_timeout, c.home, c.on_usage, c._share) == (
        "claude-x",
        7.5,
        tmp_path,
        on_usage,
        share,
    )


def test_a_manager_with_settings_takes_their_mode_and_consolidation_rule(tmp_path: Path) -> None:
    stores = MemoryStores(tmp_path / "ws", tmp_path / "home", fs=FS())
    settings = Settings(memory_mode="review", consolidate_after=7, consolidate_review=False)
    m = memory_parts.build_manager(stores, None, settings)
    assert (m.mode, m.consolidate_after, m.consolidate_review, m.fs) == (
        MemoryMode.REVIEW,
        7,
        False,
        stores.fs,
    )
    assert memory_parts.build_manager(stores, None, settings, mode=MemoryMode.AUTO).mode == MemoryMode.AUTO


def test_a_manager_without_settings_keeps_its_own_defaults_and_the_runtimes_backoff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PSEUDOCLAUDE_RETRY_DELAY", "0.25")
    stores = MemoryStores(tmp_path / "ws", tmp_path / "home")
    m = memory_parts.build_manager(stores, None)
    assert (m.mode, m.consolidate_after, m.consolidate_review) == (MemoryMode.AUTO, 50, True)
    assert m.pipeline.backoff_base == pipeline.BACKOFF_BASE * 0.25
