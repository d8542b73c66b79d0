"""More pinned cards than the prompt's index holds: the pins that fit are shown, and
the overflow line says how many pinned notes did not fit, in a clause of its own at its end (the
rest of the line, its count and its split, stay as they were); nothing is said when every pin fits.
`memory index` prints exactly that line."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from memory.constants import Level, NoteType
from memory.model import NoteMeta
from memory.store.frontmatter import dump_note
from memory.store.index import index_keys
from memory.store.stores import MemoryStores
from tests.support.clitools import run_cli
from tests.support.memtools import trust_workspace, write_note

pytestmark = pytest.mark.timeout(120)

OVERFLOW_RE = re.compile(r"^\((\d+) more notes not shown \(([^)]*)\); search_memory finds them by topic")
PINS_RE = re.compile(r"; (\d+) pinned notes? did not fit\.\)$")


def pin_cards(stores: MemoryStores, n: int, *, start: int = 0) -> None:
    folder = stores.project.dir
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(start, start + n):
        meta = NoteMeta(
            title=f"Pinned rule {k:03d}",
            summary=f"always keep rule {k}",
            type=NoteType.PROJECT_KNOWLEDGE,
            created="2026-01-01T00:00:00Z",
            updated="2026-01-01T00:00:00Z",
            source="seed",
            pinned=True,
        )
        (folder / f"project_knowledge_pin-{k:03d}.md").write_bytes(dump_note(meta, f"Rule {k}.\n"))


def stores_of(ws: Path) -> MemoryStores:
    ws = Path(os.path.realpath(ws))
    trust_workspace(ws)
    return MemoryStores(ws)


def test_the_overflow_line_says_how_many_pinned_notes_did_not_fit(ws: Path) -> None:
    stores = stores_of(ws)
    pin_cards(stores, 250)
    for k in range(20):
        write_note(stores, Level.PROJECT, f"project_knowledge_plain-{k:02d}.md", f"Plain {k}", "Body.")
    prompt = stores.prompt_index()
    shown_pins = [k for k in index_keys(prompt.text) if "/project_knowledge_pin-" in k]
    assert 0 < len(shown_pins) < 250 and len(shown_pins) == len(prompt.shown)  # the pins first, only pins
    left = 250 - len(shown_pins)
    assert len(prompt.pinned_left_out) == left
    assert set(prompt.pinned_left_out) <= set(prompt.left_out) and len(prompt.left_out) == left + 20
    last = prompt.text.split("\n")[-1]
    m = OVERFLOW_RE.match(last)
    assert m is not None and int(m.group(1)) == left + 20 and m.group(2) == f"{left + 20} project", last
    pins = PINS_RE.search(last)
    assert pins is not None and int(pins.group(1)) == left, last
    # The index still keeps to its budget with the longer line.
    from memory.constants import INDEX_MAX_BYTES, INDEX_MAX_LINES

    assert prompt.text.count("\n") + 1 <= INDEX_MAX_LINES and len(prompt.text.encode()) <= INDEX_MAX_BYTES


def test_nothing_is_said_of_pins_when_every_pin_fits(ws: Path) -> None:
    stores = stores_of(ws)
    pin_cards(stores, 3)
    for k in range(300):
        write_note(stores, Level.PROJECT, f"project_knowledge_plain-{k:03d}.md", f"Plain {k}", "Body.")
    prompt = stores.prompt_index()
    last = prompt.text.split("\n")[-1]
    assert OVERFLOW_RE.match(last) and "pinned" not in last and last.endswith("paged with offset and limit.)")
    assert prompt.pinned_left_out == ()


def test_memory_index_prints_the_pins_that_did_not_fit(ws: Path) -> None:
    stores = stores_of(ws)
    pin_cards(stores, 250)
    res = run_cli(None, ws, "memory", "index")
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    shown = [line for line in lines if line.startswith("- [")]
    [last] = [line for line in lines if OVERFLOW_RE.match(line)]
    pins = PINS_RE.search(last)
    assert pins is not None and int(pins.group(1)) == 250 - len(shown), last
