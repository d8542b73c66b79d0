"""``cites`` and ``confirmed`` in a card's front matter (memory/store/frontmatter.py): written by
the app, read back exactly, and read leniently from a hand-edited or cloned card."""

from __future__ import annotations

from typing import Any

import yaml

from memory.constants import NoteType
from memory.model import Cite, NoteMeta
from memory.store.frontmatter import dump_note, parse_cites, parse_meta, split_note

GIT_ID = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
SHA_ID = "sha256:" + "ab" * 32


def _meta(**kw: Any) -> NoteMeta:
    return NoteMeta(
        title="Build",
        summary="make all",
        type=NoteType.PROJECT_KNOWLEDGE,
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
        source="manual",
        **kw,
    )


def _round_trip(meta: NoteMeta, body: str = "Run make all.\n") -> tuple[NoteMeta, str]:
    data, text = split_note(dump_note(meta, body).decode())
    return parse_meta(data), text


def test_cites_and_confirmed_round_trip() -> None:
    cites = (Cite(path="Makefile", lines="10-40", blob=GIT_ID), Cite(path="docs/é file.md", blob=SHA_ID))
    meta = _meta(cites=cites, confirmed="2026-12-01T10:00:00Z")
    text = dump_note(meta, "body").decode()
    assert "cites:\n- path: Makefile\n  lines: 10-40\n  blob: " + GIT_ID in text
    assert "confirmed: '2026-12-01T10:00:00Z'" in text
    assert _round_trip(meta) == (meta, "Run make all.\n")


def test_a_card_without_cites_keeps_the_six_line_head() -> None:
    text = dump_note(_meta(), "body").decode()
    assert "cites" not in text and "confirmed" not in text
    assert text.count("\n") == 9


def test_odd_paths_round_trip() -> None:
    for path in ("a: b.py", "- x", "#hash", "'q'.txt", "yes", "123", "src/[x].py", "使用.md", "a\tb"):
        meta = _meta(cites=(Cite(path=path, blob=GIT_ID),))
        assert _round_trip(meta)[0].cites == meta.cites, path


def test_hostile_cites_are_read_leniently() -> None:
    assert parse_cites("Makefile") == ()
    assert parse_cites({"path": "Makefile", "blob": GIT_ID}) == ()
    assert parse_cites(None) == ()
    got = parse_cites(
        [
            "Makefile",
            7,
            {"path": "Makefile"},  # no blob: rests on nothing checkable
            {"path": "Makefile", "blob": "nothex"},
            {"path": "Makefile", "blob": GIT_ID.upper()},
            {"path": "Makefile", "blob": "sha256:" + "z" * 64},
            {"path": 5, "blob": GIT_ID},
            {"path": "", "blob": GIT_ID},
            {"path": "a\x00b", "blob": GIT_ID},
            {"path": "x" * 5000, "blob": GIT_ID},
            {"path": "kept.py", "lines": "3-x", "blob": GIT_ID},
            {"path": "kept.py", "lines": 12, "blob": SHA_ID},
            {"path": "../up.py", "blob": GIT_ID},  # read as written; the checker refuses it
        ]
    )
    assert got == (
        Cite(path="kept.py", blob=GIT_ID),
        Cite(path="kept.py", lines="12", blob=SHA_ID),
        Cite(path="../up.py", blob=GIT_ID),
    )
    assert len(parse_cites([{"path": f"f{i}", "blob": GIT_ID} for i in range(500)])) == 64


def test_a_card_with_a_hostile_cites_block_still_parses() -> None:
    head = yaml.safe_dump(
        {
            "title": "T",
            "type": "project_knowledge",
            "cites": {"a": [1, {"b": None}]},
            "confirmed": ["not", "a", "time"],
        }
    )
    data, _ = split_note(f"---\n{head}---\nbody\n")
    meta = parse_meta(data)
    assert meta.cites == () and meta.title == "T"
