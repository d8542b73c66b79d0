"""Cards with git conflict markers: recognised only in git's own shape, split into the
two whole versions, and never parsed into a prompt."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.constants import MANUAL_SOURCE, Level, NoteType
from memory.model import NoteMeta
from memory.store.conflict import has_conflict, split_conflict
from memory.store.frontmatter import dump_note
from memory.store.noteparse import parse_note
from memory.store.store import StoreError
from tests.support.memtools import make_env, op, write_note


def merge_file(
    tmp: Path, base: str, ours: str, theirs: str, *, diff3: bool = False, favor: str | None = None
) -> tuple[int, str]:
    """What ``git merge-file`` writes for a three-way merge of the three texts (markers on
    conflict; ``favor`` "ours"/"theirs": git's own resolution taking that side of each hunk)."""
    for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
        (tmp / name).write_text(text)
    args = ["git", "merge-file", "-p", "-L", "HEAD", "-L", "base", "-L", "feature"]
    if diff3:
        args.append("--diff3")
    if favor:
        args.append(f"--{favor}")
    done = subprocess.run(
        [*args, "ours", "base", "theirs"], cwd=tmp, capture_output=True, text=True, timeout=30
    )
    assert done.returncode >= 0, done.stderr
    return done.returncode, done.stdout


def card(title: str, body: str, summary: str = "s") -> str:
    meta = NoteMeta(
        title=title,
        summary=summary,
        type=NoteType.PROJECT_KNOWLEDGE,
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
        source="x",
    )
    return dump_note(meta, body).decode()


def test_a_git_conflict_splits_into_both_whole_versions(tmp_path: Path) -> None:
    base = card("Build", "Run make.\nThen test.\n")
    ours = card("Build", "Run make build.\nThen test.\n")
    theirs = card("Build", "Run ninja.\nThen test.\n")
    for diff3 in (False, True):
        code, merged = merge_file(tmp_path, base, ours, theirs, diff3=diff3)
        assert code == 1 and has_conflict(merged)
        sides = split_conflict(merged)
        assert sides is not None
        assert (sides.ours, sides.theirs) == (ours, theirs)
        assert (sides.ours_label, sides.theirs_label) == ("HEAD", "feature")


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "title: x\n", "---\n"]), max_size=6)


@settings(max_examples=40)
@given(base=lines, ours=lines, theirs=lines, diff3=st.booleans())
def test_any_conflict_git_writes_gives_back_the_two_sides(
    tmp_path_factory: pytest.TempPathFactory, base: list[str], ours: list[str], theirs: list[str], diff3: bool
) -> None:
    tmp = tmp_path_factory.mktemp("merge")
    code, merged = merge_file(tmp, "".join(base), "".join(ours), "".join(theirs), diff3=diff3)
    sides = split_conflict(merged)
    if code == 0:
        assert sides is None  # a clean merge is no conflict
        return
    # Each side is the merge with that side taken in every conflicting hunk: what git itself
    # gives with --ours / --theirs (the hunks that merged cleanly are in both).
    want = [
        merge_file(tmp, "".join(base), "".join(ours), "".join(theirs), favor=f)[1] for f in ("ours", "theirs")
    ]
    assert sides is not None and [sides.ours, sides.theirs] == want


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: t\n---\nResolve with <<<<<<< HEAD and ======= inline.\n",
        "---\ntitle: t\n---\n<<<<<<< HEAD\nonly an opening line\n",
        "---\ntitle: t\n---\n<<<<<<< HEAD\na\n>>>>>>> b\n",  # no separator
        "---\ntitle: t\n---\n=======\na\n<<<<<<< HEAD\n",  # out of order
        "---\ntitle: t\n---\n<<<<<<<< too\n",
    ],
)
def test_text_that_only_mentions_markers_is_no_conflict(text: str) -> None:
    assert not has_conflict(text) and split_conflict(text) is None
    assert parse_note(Level.PROJECT, "project_knowledge_t.md", text.encode()).conflict is None


def test_hostile_labels_are_one_short_plain_line() -> None:
    text = "<<<<<<< HEAD\x1b]0;pwned\x07\u202e\na\n=======\nb\n>>>>>>> " + "x" * 500 + "\n"
    sides = split_conflict(text)
    assert sides is not None
    assert "\x1b" not in sides.ours_label and "\u202e" not in sides.ours_label
    assert len(sides.theirs_label) <= 60


def conflicted(tmp_path: Path) -> tuple[object, bytes]:
    stores = make_env(tmp_path)
    write_note(stores, Level.PROJECT, "project_knowledge_ok.md", "Fine card", "fine\n")
    _, merged = merge_file(
        tmp_path,
        card("Build", "Run make.\n"),
        card("Build", "Run make build.\n", "ours sum"),
        card("Build (ninja)", "Run ninja.\n", "theirs sum"),
    )
    path = stores.project.dir / "project_knowledge_build.md"
    path.write_text(merged)
    return stores, merged.encode()


def test_a_conflicted_card_is_listed_never_indexed_never_read(tmp_path: Path) -> None:
    stores, data = conflicted(tmp_path)
    note = parse_note(Level.PROJECT, "project_knowledge_build.md", data)
    assert note.conflict is not None and note.unparsed
    assert note.meta.title == "Build" and note.body == data.decode()
    assert note.broken is not None and note.broken.startswith(
        "conflicted: changed on two branches ('HEAD' and 'feature')"
    )
    lines, left_out = stores.project.index_entries()  # type: ignore[attr-defined]
    assert [ln for ln in lines if "build" in ln] == []
    assert left_out == [("project_knowledge_build.md", note.broken)]
    text = stores.merged_index()  # type: ignore[attr-defined]
    assert "Fine card" in text and "Build" not in text and "<<<<<<<" not in text
    with pytest.raises(StoreError, match="conflicted"):
        stores.read_memory("project", "project_knowledge_build.md")  # type: ignore[attr-defined]


def test_the_model_never_resolves_a_conflict_a_person_does(tmp_path: Path) -> None:
    stores, data = conflicted(tmp_path)
    path = stores.project.dir / "project_knowledge_build.md"  # type: ignore[attr-defined]
    for action in ("update", "delete"):
        res = stores.apply(
            [(0, op(action, "project", filename=path.name, content="Run make."))],  # type: ignore[attr-defined]
            source="session-1",
        )
        assert not res.applied and "conflicted" in res.rejected[0].reason
        assert path.read_bytes() == data
    res = stores.apply(
        [(0, op("update", "project", filename=path.name, title="Build", content="Run make build.\n"))],  # type: ignore[attr-defined]
        source=MANUAL_SOURCE,
    )
    assert res.applied and not res.rejected
    note = stores.read_note("project", path.name)  # type: ignore[attr-defined]
    assert note.conflict is None and not note.unparsed and note.body == "Run make build.\n"
    assert note.meta.source == MANUAL_SOURCE and note.meta.summary == "ours sum"
    assert "Build" in stores.merged_index()  # type: ignore[attr-defined]
    stores.undo()  # type: ignore[attr-defined]
    assert path.read_bytes() == data  # undo brings the conflicted file back, both sides kept
