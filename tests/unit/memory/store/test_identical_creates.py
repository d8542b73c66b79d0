"""A create whose title and content equal an existing card's (same level) is refused as a
duplicate naming that card, not written again as ``-2``, ``-3``, ``-4``."""

from __future__ import annotations

from pathlib import Path

from memory.constants import Level
from memory.store.stores import MemoryStores
from tests.support.memtools import create, make_env


def _names(stores: MemoryStores, level: Level) -> list[str]:
    return sorted(p.name for p in stores.store(level).dir.glob("*.md") if p.name != "MEMORY.md")


def test_an_identical_create_is_rejected_with_the_existing_filename(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    first = stores.apply([(0, create("project", "Build workflow", "Run make build.\n"))], source="s1")
    assert [a.filename for a in first.applied] == ["project_knowledge_build-workflow.md"]
    for _ in range(3):
        again = stores.apply([(0, create("project", "Build workflow", "Run make build."))], source="s2")
        assert again.applied == []
        assert len(again.rejected) == 1
        reason = again.rejected[0].reason
        assert "already exists" in reason and "project_knowledge_build-workflow.md" in reason
    assert _names(stores, Level.PROJECT) == ["project_knowledge_build-workflow.md"]


def test_two_identical_creates_in_one_batch_write_one_card(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    res = stores.apply(
        [
            (0, create("user", "Tabs", "Tabs, not spaces.", "user_preference")),
            (1, create("user", "Tabs", "Tabs, not spaces.", "user_preference")),
        ],
        source="s",
    )
    assert len(res.applied) == 1 and len(res.rejected) == 1 and res.rejected[0].index == 1
    assert _names(stores, Level.USER) == ["user_preference_tabs.md"]


def test_a_same_title_with_other_content_or_level_is_still_created(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    stores.apply([(0, create("project", "Build workflow", "Run make build."))], source="s")
    res = stores.apply(
        [
            (0, create("project", "Build workflow", "Run make all.")),
            (1, create("user", "Build workflow", "Run make build.")),
        ],
        source="s",
    )
    assert res.rejected == [] and len(res.applied) == 2
    assert _names(stores, Level.PROJECT) == [
        "project_knowledge_build-workflow-2.md",
        "project_knowledge_build-workflow.md",
    ]
    assert _names(stores, Level.USER) == ["project_knowledge_build-workflow.md"]
