"""A person's "still true" (``MemoryStores.confirm``, transaction.confirm_locked): citations taken
again from the workspace in a ``source: manual`` batch that ``undo`` reverts byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.constants import MANUAL_SOURCE
from memory.model import rfc3339
from memory.store.store import StoreError
from memory.store.stores import MemoryStores
from tests.support.memtools import tree
from tests.unit.memory.grounding.conftest import CARD_TIME, cited_card, git


def _blob(repo: Path, path: str) -> str:
    return git(repo, "hash-object", path).strip()


def test_confirm_refreshes_the_ids_and_sets_confirmed(stores: MemoryStores, repo: Path) -> None:
    name = cited_card(stores, "Makefile:1-2", "src/app.py")
    body = stores.read_note("project", name).body
    (repo / "Makefile").write_text("all:\n\techo bye\n")
    git(repo, "add", "Makefile")
    assert stores.staleness()[name].stale
    result, said = stores.confirm("project", name)
    assert said == [] and result.txid and not result.rejected
    note = stores.read_note("project", name)
    assert [(c.path, c.lines, c.blob) for c in note.meta.cites] == [
        ("Makefile", "1-2", _blob(repo, "Makefile")),
        ("src/app.py", None, _blob(repo, "src/app.py")),
    ]
    assert note.meta.confirmed == rfc3339(CARD_TIME)
    assert note.body == body
    assert not stores.staleness()[name].stale
    entry = stores.history()[-1]
    assert (entry.source, entry.label, entry.txid) == (MANUAL_SOURCE, f"{name} confirmed by you", result.txid)


def test_confirm_follows_a_rename_and_drops_a_deleted_citation(stores: MemoryStores, repo: Path) -> None:
    (repo / "gone.txt").write_text("soon gone\n")
    name = cited_card(stores, "src/app.py:2-4", "gone.txt", "Makefile")
    git(repo, "mv", "src/app.py", "src/main.py")
    (repo / "gone.txt").unlink()
    _, said = stores.confirm("project", name)
    assert said == [
        "src/app.py is now cited as src/main.py",
        "dropped the citation of gone.txt: gone.txt was deleted",
    ]
    cites = stores.read_note("project", name).meta.cites
    assert [(c.path, c.lines, c.blob) for c in cites] == [
        ("src/main.py", "2-4", _blob(repo, "src/main.py")),
        ("Makefile", None, _blob(repo, "Makefile")),
    ]
    assert not stores.staleness()[name].stale


def test_undo_restores_the_card_bytes_exactly(stores: MemoryStores, repo: Path) -> None:
    name = cited_card(stores, "Makefile")
    (repo / "Makefile").write_text("changed\n")
    before = (stores.project.dir / name).read_bytes()
    stores.confirm("project", name)
    assert (stores.project.dir / name).read_bytes() != before
    undone = stores.undo()
    assert undone.txid and not undone.rejected
    assert (stores.project.dir / name).read_bytes() == before
    assert stores.staleness()[name].reason == "Makefile changed since this card was written"


def _refused(stores: MemoryStores, *args: str | None) -> str:
    state, history = tree(stores.project.dir), len(stores.history())
    with pytest.raises(StoreError) as e:
        stores.confirm("project", *args)  # type: ignore[arg-type]
    assert tree(stores.project.dir) == state and len(stores.history()) == history
    reason = str(e.value)
    assert reason and "\n" not in reason
    return reason


def test_confirming_what_cannot_be_confirmed_says_why_and_writes_nothing(stores: MemoryStores) -> None:
    name = cited_card(stores, "Makefile")
    assert "project_knowledge_nope.md" in _refused(stores, "project_knowledge_nope.md")
    assert _refused(stores, name, "0" * 64) == f"'{name}' changed since it was opened; nothing was confirmed"
    (stores.project.dir / "project_knowledge_broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    assert "does not parse" in _refused(stores, "project_knowledge_broken.md")
    assert _refused(stores, "../escape.md")


def test_confirm_with_the_right_expected_sha_applies(stores: MemoryStores) -> None:
    name = cited_card(stores, "Makefile")
    result, _ = stores.confirm("project", name, stores.read_note("project", name).sha256)
    assert result.txid
