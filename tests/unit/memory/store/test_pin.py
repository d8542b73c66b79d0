"""Pinned cards: ``pinned`` in the front matter (the fast reader and YAML agree),
``MemoryStores.pin`` as an undoable manual batch, conflicts and unparsable cards refused, and an
update op keeping the pin."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from memory.constants import Level
from memory.store.frontmatter import YAML_LOADER, dump_note, parse_meta, split_note
from memory.store.store import StoreError
from memory.store.stores import MemoryStores
from tests.support.memtools import create, make_env, op, write_note

HEAD = "title: Build\nsummary: ''\ntype: project_knowledge\ncreated: '2026-01-01T00:00:00Z'\n"


@pytest.mark.parametrize(
    ("line", "pinned"),
    [
        ("pinned: true", True),
        ("pinned: 'true'", True),
        ('pinned: "true"', True),
        ("pinned: True", True),
        ("pinned: TRUE", True),
        ("pinned: yes", True),  # YAML 1.1's boolean, as the YAML library reads it
        ("pinned: false", False),
        ("pinned: 'false'", False),
        ("pinned: no", False),
        ("pinned: 1", False),  # only true pins
        ("pinned: ''", False),
        ("pinned:", False),
        ("pinned: [true]", False),
        ("pinned: 'yes please'", False),
    ],
)
def test_the_fast_reader_and_yaml_agree_on_pinned(line: str, pinned: bool) -> None:
    head = f"{HEAD}{line}\n"
    fast, _ = split_note(f"---\n{head}---\nbody\n")
    slow = yaml.load(head, Loader=YAML_LOADER)
    assert parse_meta(fast).pinned is parse_meta(slow).pinned is pinned


def test_pinned_is_written_only_when_true_and_reads_back() -> None:
    meta = parse_meta(split_note(f"---\n{HEAD}---\nbody\n")[0])
    assert b"pinned" not in dump_note(meta, "body")
    pinned = meta.model_copy(update={"pinned": True})
    data = dump_note(pinned, "body")
    assert data.count(b"\npinned: true\n") == 1
    assert parse_meta(split_note(data.decode())[0]) == pinned


def _card(tmp_path: Path) -> tuple[MemoryStores, str, Path]:
    stores = make_env(tmp_path)
    res = stores.apply([(0, create("project", "Build steps", "Run make before pushing."))], source="s")
    name = res.applied[0].filename
    return stores, name, stores.project.dir / name


def test_pin_unpin_and_undo_change_only_the_pin(tmp_path: Path) -> None:
    stores, name, path = _card(tmp_path)
    before = path.read_bytes()
    res = stores.pin("project", name)
    assert res.applied and res.txid
    pinned = path.read_bytes()
    note = stores.read_note("project", name)
    assert note.meta.pinned and note.body == "Run make before pushing.\n"
    assert pinned == dump_note(note.meta, note.body)
    assert pinned.replace(b"pinned: true\n", b"") == before
    assert stores.pin("project", name).applied == []  # already pinned: nothing written
    assert path.read_bytes() == pinned
    stores.undo()
    assert path.read_bytes() == before
    stores.pin("project", name)
    assert stores.pin("project", name, pinned=False).applied
    assert path.read_bytes() == before
    stores.undo()
    assert path.read_bytes() == pinned


def test_pin_labels_its_batch_as_a_person_s(tmp_path: Path) -> None:
    stores, name, _ = _card(tmp_path)
    stores.pin("project", name)
    entry = stores.history()[-1]
    assert entry.label == f"{name} pinned by you" and entry.source == "manual"


def test_pin_refuses_a_card_changed_since_it_was_opened(tmp_path: Path) -> None:
    stores, name, path = _card(tmp_path)
    sha = stores.read_note("project", name).sha256
    path.write_bytes(path.read_bytes() + b"edited elsewhere\n")
    edited = path.read_bytes()
    with pytest.raises(StoreError, match="changed since it was opened") as e:
        stores.pin("project", name, expected_sha=sha)
    assert "\n" not in str(e.value)
    assert path.read_bytes() == edited
    assert stores.pin("project", name, expected_sha=stores.read_note("project", name).sha256).applied


def test_pin_refuses_an_unparsable_card_with_a_reason(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    path = write_note(stores, Level.PROJECT, "project_knowledge_bad.md", "Bad", "body")
    path.write_bytes(b"---\ntitle: [unclosed\n---\nbody\n")
    with pytest.raises(StoreError, match="does not parse") as e:
        stores.pin("project", "project_knowledge_bad.md")
    assert "\n" not in str(e.value) and "nothing was pinned" in str(e.value)
    assert path.read_bytes() == b"---\ntitle: [unclosed\n---\nbody\n"
    with pytest.raises(StoreError):
        stores.pin("project", "project_knowledge_missing.md")
    with pytest.raises(StoreError):
        stores.pin("project", "../escape.md")


def test_an_update_op_keeps_the_pin(tmp_path: Path) -> None:
    stores, name, _ = _card(tmp_path)
    stores.pin("project", name)
    res = stores.apply(
        [(0, op("update", "project", filename=name, content="Run make and lint before pushing."))], source="s"
    )
    assert res.applied
    note = stores.read_note("project", name)
    assert note.meta.pinned and note.body.startswith("Run make and lint")
