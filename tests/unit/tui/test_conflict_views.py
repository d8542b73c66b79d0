"""Conflicted cards as the card browser and the editor get them (app/tui/screens/memory_views.py): both
versions kept and sanitized, a side whose front matter does not parse kept as body text, the
merge draft, and the store's card paths on a conflicted card (resolved by one manual update;
never moved with its markers)."""

from __future__ import annotations

from pathlib import Path

from app.tui.screens.memory_views import MERGE_MARK, merge_draft
from memory.constants import Level
from memory.store.cards import finish_external_edit, move_card, save_card, start_external_edit
from memory.store.conflict import has_conflict
from memory.store.stores import MemoryStores
from tests.support.memtools import make_env, write_note
from tests.support.memviews import card_rows, draft_of, read_draft

NAME = "project_knowledge_build.md"


def side(title: str, body: str, *, summary: str = "how to build", extra: str = "") -> str:
    return (
        f"---\ntitle: {title}\nsummary: {summary}\ntype: project_knowledge\ncreated: 2026-01-01T00:00:00Z\n"
        f"updated: 2026-01-02T00:00:00Z\nsource: manual\n{extra}---\n{body}"
    )


def conflicted(ours: str, theirs: str, ours_label: str = "HEAD", theirs_label: str = "feature") -> str:
    """A card file as git leaves it when both branches changed it (one hunk: the whole file)."""
    return f"<<<<<<< {ours_label}\n{ours}=======\n{theirs}>>>>>>> {theirs_label}\n"


def write_conflicted(stores: MemoryStores, text: str, name: str = NAME) -> Path:
    path = write_note(stores, Level.PROJECT, name, "placeholder", "x")
    path.write_text(text, encoding="utf-8")
    return path


def only_row(stores: MemoryStores):  # type: ignore[no-untyped-def]
    rows, _ = card_rows(stores)
    (row,) = [r for r in rows if r.filename == NAME]
    return row


def test_a_conflicted_cards_row_keeps_both_versions(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    write_conflicted(
        stores,
        conflicted(
            side("Build with make", "Run `make build`.\n"),
            side("Build with ninja", "Run `ninja`.\n", summary="faster", extra="pinned: true\n"),
        ),
    )
    row = only_row(stores)
    assert row.conflict is not None and row.broken is not None and "conflicted" in row.broken
    assert row.title == "Build with make"  # our side's front matter names the row
    ours, theirs = row.conflict.ours, row.conflict.theirs
    assert (ours.label, theirs.label) == ("HEAD", "feature")
    assert (ours.draft.title, ours.draft.summary, ours.draft.body, ours.draft.pinned) == (
        "Build with make",
        "how to build",
        "Run `make build`.\n",
        False,
    )
    assert (theirs.draft.title, theirs.draft.summary, theirs.draft.body, theirs.draft.pinned) == (
        "Build with ninja",
        "faster",
        "Run `ninja`.\n",
        True,
    )
    assert ours.problem == theirs.problem == ""
    assert not row.in_prompt
    # ``git pull`` from a URL labels theirs with the commit id: shown cut to 12.
    write_conflicted(
        stores, conflicted(side("A", "a\n"), side("B", "b\n"), theirs_label="9221f2670c92" + "0" * 28)
    )
    row = only_row(stores)
    assert row.conflict is not None and row.conflict.theirs.label == "9221f2670c92"


def test_hostile_labels_and_escape_sequences_are_sanitized_on_both_sides(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    # YAML's own escapes (\e, \a): the front matter parses and hands the app the raw bytes.
    evil_title = '"Build \\e[31mred\\e[0m \\e]0;pwned\\anow"'
    text = conflicted(
        side(evil_title, "ours \x1b[2Jbody\x07\n", summary='"sum\\e[5m"'),
        side("Theirs\u202e title", "theirs\x1b]52;c;Zm9v\x07 body\n"),
        ours_label="HEAD\x1b[31m \x1b]8;;http://x\x07link",
        theirs_label="br\x00anch\u202e",
    )
    write_conflicted(stores, text)
    row = only_row(stores)
    assert row.conflict is not None
    sides = (row.conflict.ours, row.conflict.theirs)
    for s in sides:
        for value in (s.label, s.draft.title, s.draft.summary, s.draft.body):
            assert (
                "\x1b" not in value and "\x07" not in value and "\x00" not in value and "\u202e" not in value
            )
            assert "[31m" not in value and "]0;" not in value and "52;c" not in value
    assert sides[0].problem == "" and sides[0].draft.summary == "sum"
    assert sides[0].draft.title == "Build red now" and sides[0].draft.body == "ours body\n"
    assert sides[1].draft.body == "theirs body\n" and sides[1].label == "branch"
    assert sides[0].label.startswith("HEAD")


def test_a_side_whose_front_matter_does_not_parse_is_kept_whole_as_body_text(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    broken = "---\ntitle: [unclosed\n---\nTheir notes on the build.\n"
    write_conflicted(stores, conflicted(side("Build with make", "Run `make build`.\n"), broken))
    row = only_row(stores)
    assert row.conflict is not None
    theirs = row.conflict.theirs
    assert theirs.problem  # says why
    assert theirs.draft.body == broken  # nothing of it lost
    assert theirs.draft.title == "Build with make" and theirs.draft.type == "project_knowledge"
    # Both unparsed: the filename names it.
    write_conflicted(stores, conflicted("no front matter here\n", broken))
    row = only_row(stores)
    assert row.conflict is not None
    assert row.conflict.ours.draft.title == "project_knowledge_build"
    assert row.conflict.ours.draft.body == "no front matter here\n"
    merged = merge_draft(row.conflict)
    assert "no front matter here" in merged.body and "Their notes on the build." in merged.body


def test_the_merge_draft_holds_both_bodies_under_a_mark_never_git_markers(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    write_conflicted(
        stores,
        conflicted(
            side("Build with make", "Run `make build`.\n"), side("Build with ninja", "Run `ninja`.\n")
        ),
    )
    row = only_row(stores)
    assert row.conflict is not None
    merged = merge_draft(row.conflict)
    assert merged.title == "Build with make"
    assert merged.body.startswith("Run `make build`.\n\n" + MERGE_MARK)
    assert "(theirs · feature)" in merged.body and "title: Build with ninja" in merged.body
    assert merged.body.endswith("Run `ninja`.\n")
    assert not has_conflict(merged.body) and "<<<<<<<" not in merged.body and "=======" not in merged.body
    # The editor loads a conflicted card as this merge (read_draft), never the raw file.
    loaded = read_draft(stores, "project", NAME)
    assert loaded is not None and loaded[0] == merged and loaded[1] == row.sha256
    assert draft_of(stores.read_note("project", NAME)) == merged
    # Same bodies and fields: nothing to merge, the draft is our side as it is.
    write_conflicted(
        stores, conflicted(side("Same", "Same body.\n"), side("Same", "Same body.\n", extra="x: 1\n"))
    )
    row = only_row(stores)
    assert row.conflict is not None
    assert merge_draft(row.conflict).body == "Same body.\n"


def test_a_manual_update_resolves_a_conflicted_card_and_a_move_is_refused(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    path = write_conflicted(
        stores,
        conflicted(
            side("Build with make", "Run `make build`.\n"), side("Build with ninja", "Run `ninja`.\n")
        ),
    )
    raw = path.read_bytes()
    row = only_row(stores)
    moved = move_card(stores, "project", NAME, "user", row.sha256)
    assert moved.status == "rejected" and "conflicted" in moved.reason
    assert path.read_bytes() == raw and stores.notes(Level.USER) == []
    assert row.conflict is not None
    theirs = row.conflict.theirs.draft
    result = save_card(
        stores,
        "project",
        theirs.type,
        theirs.title,
        theirs.summary,
        theirs.body,
        filename=NAME,
        expected_sha=row.sha256,
        original_level="project",
    )
    assert result.status == "applied", result.reason
    note = stores.read_note("project", NAME)
    assert note.conflict is None and not note.unparsed and note.meta.title == "Build with ninja"
    assert note.body == "Run `ninja`.\n" and note.meta.source == "manual"
    stores.undo()
    assert path.read_bytes() == raw


def test_a_body_that_still_holds_git_markers_is_refused_by_the_editor_and_by_editor_copies(
    tmp_path: Path,
) -> None:
    stores = make_env(tmp_path)
    # Both branches changed only the body: the front matter is common, the hunk is in the body.
    head = side("Build", "")
    path = write_conflicted(stores, head + "<<<<<<< HEAD\nRun make.\n=======\nRun ninja.\n>>>>>>> feature\n")
    raw = path.read_bytes()
    marked = "Run make.\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> feature\n"
    assert (
        "conflict markers" in stores.check_card("project", "project_knowledge", "Build", "", marked)["body"]
    )
    assert (
        stores.check_card("project", "project_knowledge", "Build", "", "Run make; a ======= line is fine.\n")
        == {}
    )
    edit = start_external_edit(stores, "project", NAME)
    edit.path.write_text(path.read_text().replace("title: Build", "title: Build it"))  # markers left in
    done = finish_external_edit(stores, edit)
    assert done.status == "invalid" and "conflict markers" in done.problem
    assert path.read_bytes() == raw
    edit.path.write_text(head + "Run make or ninja.\n")
    done = finish_external_edit(stores, edit)
    assert done.status == "applied", done.problem
    note = stores.read_note("project", NAME)
    assert note.conflict is None and note.body == "Run make or ninja.\n"
