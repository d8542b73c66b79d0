"""The automatic consolidation trigger: a store grown by ``consolidate_after``
cards since its last consolidation gets one job; 0 = never; never a second while one is spooled."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from memory.constants import Level, MemoryMode
from memory.jobs.manager import Manager
from memory.store.stores import MemoryStores
from tests.support.memtools import make_env, write_note


@pytest.fixture
def stores(tmp_path: Path) -> MemoryStores:
    env = make_env(tmp_path)
    for k, word in enumerate(["frobnicator", "telemetry"]):
        write_note(
            env, Level.PROJECT, f"project_knowledge_base{k}.md", f"Topic {word}", f"The {word} settings."
        )
    return env


def dup(stores: MemoryStores, k: int) -> None:
    write_note(
        stores,
        Level.PROJECT,
        f"project_knowledge_pnpm{k}.md",
        "Use pnpm, not npm",
        "This project uses pnpm for installs; npm breaks the lockfile.",
        summary="pnpm, not npm",
    )


def manager(stores: MemoryStores, **kw: Any) -> Manager:
    return Manager(stores, None, session="s", **kw)


def consolidations(m: Manager) -> list[str]:
    return [e.id for e in m.entries() if e.job is not None and e.job.purpose == "consolidate"]


async def test_below_the_threshold_nothing_then_one_job_after_n_new_cards(stores: MemoryStores) -> None:
    m = manager(stores, consolidate_after=5)
    assert await m.maybe_consolidate() == [], "first sight records the count"
    states = sorted((stores.paths.home / "state").glob("consolidate-*.json"))
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in states)
    kept = sorted((json.loads(p.read_text())["seen"], json.loads(p.read_text())["new"]) for p in states)
    assert kept == [(0, 0), (2, 0)], "each store folder: its own file, its count (user: none)"
    for k in range(4):
        dup(stores, k)
    assert await m.maybe_consolidate() == [], "4 new cards, 5 needed"
    assert consolidations(m) == []
    dup(stores, 4)
    (o,) = await m.maybe_consolidate()
    assert o.level is Level.PROJECT and o.job_id is not None and o.cards == 5
    job = m.spool.peek(o.job_id)
    assert job.purpose == "consolidate" and job.mode == "review" and job.turns == []
    assert consolidations(m) == [o.job_id]


async def test_a_second_call_while_the_job_is_spooled_adds_none(stores: MemoryStores) -> None:
    m = manager(stores, consolidate_after=3)
    await m.maybe_consolidate()
    for k in range(3):
        dup(stores, k)
    (o,) = await m.maybe_consolidate()
    for k in range(3, 8):
        dup(stores, k)
    assert await m.maybe_consolidate() == []
    assert consolidations(m) == [o.job_id]


async def test_the_count_survives_a_restart_and_a_delete_never_takes_it_back(stores: MemoryStores) -> None:
    m = manager(stores, consolidate_after=3)
    await m.maybe_consolidate()  # the first look: 2 cards
    dup(stores, 0)
    dup(stores, 1)
    assert await m.maybe_consolidate() == []  # 2 new
    for name in ("project_knowledge_base0.md", "project_knowledge_base1.md"):
        (stores.project.dir / name).unlink()  # the store is back to 2 cards: still 2 new
    assert await m.maybe_consolidate() == []
    again = manager(stores, consolidate_after=3)  # a restart: the count is read back
    dup(stores, 2)
    (o,) = await again.maybe_consolidate()
    assert o.level is Level.PROJECT and o.job_id is not None and o.cards == 3


async def test_cards_added_while_nobody_looked_count_at_the_next_look(stores: MemoryStores) -> None:
    """Another process, a `memory` command or `git pull` added them: the store's growth counts."""
    await manager(stores, consolidate_after=3).maybe_consolidate()
    for k in range(3):
        dup(stores, k)
    (o,) = await manager(stores, consolidate_after=3).maybe_consolidate()
    assert o.job_id is not None


async def test_the_older_one_file_state_carries_its_count_over(stores: MemoryStores) -> None:
    import os

    state = stores.paths.home / "state"
    state.mkdir(parents=True)
    # Written by the older trigger: the project store's size at its last consolidation.
    (state / "consolidate.json").write_text(json.dumps({os.path.realpath(stores.project.dir): 1}))
    dup(stores, 0)
    dup(stores, 1)
    (o,) = await manager(stores, consolidate_after=3).maybe_consolidate()  # 4 cards: 3 new since then
    assert o.level is Level.PROJECT and o.job_id is not None and o.cards == 2


async def test_zero_means_never(stores: MemoryStores) -> None:
    m = manager(stores, consolidate_after=0)
    for k in range(60):
        dup(stores, k)
    assert await m.maybe_consolidate() == []
    assert consolidations(m) == []
    assert not list((stores.paths.home / "state").glob("consolidate*"))


async def test_review_off_follows_the_managers_mode(stores: MemoryStores) -> None:
    for k in range(3):
        dup(stores, k)
    auto = await manager(stores, consolidate_review=False).consolidate()
    assert manager(stores).spool.peek(auto[0].job_id or "").mode == "auto"
    review = manager(stores, consolidate_review=False, mode=MemoryMode.REVIEW)
    (o,) = await review.consolidate(Level.PROJECT)
    assert review.spool.peek(o.job_id or "").mode == "review"


async def test_nothing_alike_gives_no_job_and_says_why(stores: MemoryStores) -> None:
    m = manager(stores)
    (o,) = await m.consolidate("project")
    assert o.job_id is None and o.reason == "no likely duplicates among 2 project cards"
    assert consolidations(m) == []


async def test_an_untrusted_project_store_is_never_consolidated(tmp_path: Path) -> None:
    env = make_env(tmp_path, trusted=False)
    for k in range(3):
        dup(env, k)
    m = manager(env, consolidate_after=1)
    (o,) = await m.consolidate("project")
    assert o.job_id is None and "trust" in o.reason
    assert await m.maybe_consolidate() == []
    assert consolidations(m) == []


def test_the_two_settings_come_from_config_and_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.agent.config.settings import SettingsError, load_settings

    home = tmp_path / "h"
    home.mkdir()
    defaults = load_settings(home=home)
    assert (defaults.consolidate_after, defaults.consolidate_review) == (50, True)
    (home / "config.toml").write_text("consolidate_after = 10\nconsolidate_review = false\n")
    got = load_settings(home=home)
    assert (got.consolidate_after, got.consolidate_review) == (10, False)
    monkeypatch.setenv("PSEUDOCLAUDE_CONSOLIDATE_AFTER", "0")
    assert load_settings(home=home).consolidate_after == 0
    monkeypatch.delenv("PSEUDOCLAUDE_CONSOLIDATE_AFTER")
    for bad in ("consolidate_after = true", "consolidate_after = -1"):
        (home / "config.toml").write_text(bad + "\n")
        with pytest.raises(SettingsError, match="consolidate_after"):
            load_settings(home=home)


async def test_the_runtime_gives_the_manager_the_settings(tmp_path: Path) -> None:
    from app.agent.config.settings import load_settings
    from app.agent.runtime import Runtime

    home = tmp_path / "h"
    home.mkdir()
    (home / "config.toml").write_text("consolidate_after = 7\nconsolidate_review = false\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    rt = Runtime(load_settings(home=home), ws, home=home)
    try:
        assert (rt.manager.consolidate_after, rt.manager.consolidate_review) == (7, False)
        assert rt.manager.search is rt.search, "one search cache per workspace"
    finally:
        await rt.close()
