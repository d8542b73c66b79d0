"""The eval's labelled data holds what tests/eval/dataset.py promises (every answer a current card
of its workspace, near-duplicates labelled together, the sizes and the split), its cards are
cards the product accepts, and the card builder's text handling does what its docstring says."""

from __future__ import annotations

import collections
from datetime import date
from pathlib import Path

import pytest

from memory.constants import MAX_SUMMARY, MAX_TITLE, Level, NoteType
from memory.model import NoteMeta
from memory.store.frontmatter import dump_note, split_note
from memory.store.noteparse import parse_note
from memory.text.names import check_filename
from tests.eval import build_cards, changelogs
from tests.eval.dataset import (
    CARDS_DIR,
    KINDS,
    PROJECTS,
    WORKSPACES,
    Card,
    load_cards,
    load_questions,
    split_of,
    workspace_cards,
)


@pytest.fixture(scope="module")
def cards() -> dict[str, list[Card]]:
    return {ws: load_cards(ws) for ws in WORKSPACES}


def test_every_answer_is_a_current_card_of_its_workspace(cards: dict[str, list[Card]]) -> None:
    problems = []
    for q in load_questions():
        project, user = workspace_cards(q.store)
        by_key = {c.key: c for c in project + user}
        superseded = {f"{c.level}/{c.supersedes}" for c in project + user if c.supersedes}
        twins: dict[str, set[str]] = collections.defaultdict(set)
        for c in project + user:
            if c.twin_of:
                twins[c.key].add(f"{c.level}/{c.twin_of}")
                twins[f"{c.level}/{c.twin_of}"].add(c.key)
        if q.kind not in KINDS or q.store not in WORKSPACES:
            problems.append(f"{q.id}: kind {q.kind!r}, store {q.store!r}")
        if (q.kind == "on") != bool(q.answers):
            problems.append(f"{q.id}: a {q.kind} question with {len(q.answers)} answers")
        for a in q.answers:
            if a not in by_key:
                problems.append(f"{q.id}: {a} is no card of the {q.store} workspace")
            elif a in superseded:
                problems.append(f"{q.id}: {a} was superseded by a correction")
            problems += [
                f"{q.id}: {a}'s near-duplicate {t} is not an answer" for t in twins[a] if t not in q.answers
            ]
    assert not problems, "\n".join(problems)


def test_the_sets_have_the_promised_sizes(cards: dict[str, list[Card]]) -> None:
    qs = load_questions()
    kinds = collections.Counter(q.kind for q in qs)
    assert kinds["on"] >= 400 and kinds["none"] >= 100 and kinds["off"] >= 200, kinds
    ids = [q.id for q in qs]
    assert len(ids) == len(set(ids))
    texts = collections.Counter((q.store, q.text) for q in qs)
    assert [t for t, n in texts.items() if n > 1] == []
    for p in PROJECTS:
        assert 400 <= len(cards[p]) <= 800, (p, len(cards[p]))
        assert sum(1 for c in cards[p] if c.supersedes) >= 2, p  # corrections in every project store
    assert len(cards["user"]) >= 250
    assert sum(1 for c in cards["user"] if c.supersedes) >= 15
    assert sum(len(c) for c in cards.values()) >= 2500
    assert sum(p.stat().st_size for p in CARDS_DIR.glob("*.jsonl")) < 15 * 2**20


def test_the_split_is_about_seventy_thirty_and_depends_on_the_id_alone() -> None:
    qs = load_questions()
    dev = sum(q.split == "dev" for q in qs) / len(qs)
    assert 0.65 <= dev <= 0.75, dev
    # Each kind is in both parts: the held-out figures are not of one kind only.
    for kind in KINDS:
        assert {q.split for q in qs if q.kind == kind} == {"dev", "held-out"}
    assert split_of("pydantic-on-001") == split_of("pydantic-on-001")
    assert {split_of(f"x-{i}") for i in range(50)} == {"dev", "held-out"}


def test_cards_are_what_the_product_writes_and_reads_back(cards: dict[str, list[Card]]) -> None:
    problems = []
    for ws, rows in cards.items():
        names = collections.Counter(c.filename.casefold() for c in rows)
        problems += [f"{ws}: {n} twice" for n, k in names.items() if k > 1]
        for c in rows:
            if check_filename(c.filename) is not None or not c.filename.startswith(f"{c.type}_"):
                problems.append(f"{ws}/{c.filename}: filename")
            if c.type not in {t.value for t in NoteType} or not c.body.strip():
                problems.append(f"{ws}/{c.filename}: type or body")
            if not (8 <= len(c.title) <= MAX_TITLE) or not (0 < len(c.summary) <= MAX_SUMMARY):
                problems.append(f"{ws}/{c.filename}: title or summary length")
            date.fromisoformat(c.updated[:10])
    assert not problems, "\n".join(problems[:20])
    # The bytes the harness writes parse back to the same fields, with nothing sanitized away.
    for c in (cards["pytest"][0], cards["user"][0], *[c for c in cards["click"] if "`" in c.title][:3]):
        meta = NoteMeta(
            title=c.title, summary=c.summary, type=NoteType(c.type), created=c.updated, updated=c.updated
        )
        note = parse_note(Level(c.level), c.filename, dump_note(meta, c.body))
        assert (note.meta.title, note.meta.summary, note.body, note.broken) == (
            c.title,
            c.summary,
            c.body,
            None,
        )
        assert split_note(dump_note(meta, c.body).decode())[1] == c.body


# -- the builder ------------------------------------------------------------------------------


def test_sentences_do_not_end_at_an_abbreviation_or_inside_code() -> None:
    text = "Use `a.b()` here, e.g. with `x.y`. Then run it. Done"
    assert changelogs.sentences(text) == ["Use `a.b()` here, e.g. with `x.y`.", "Then run it.", "Done"]


def test_titles_are_short_labels_that_do_not_end_mid_phrase() -> None:
    long = (
        "Changed the pytest plugin to run both the setup and teardown phases of asynchronous generator "
        "fixtures within a single task"
    )
    title = build_cards.make_title(long)
    assert len(title) <= changelogs.MAX_TITLE
    assert title.split()[-1].lower() not in build_cards._TAIL_WORDS
    assert build_cards.make_title("Fix `approx` with Decimal.") == "Fix `approx` with Decimal"


def test_a_pytest_changelog_entry_becomes_a_dated_project_card() -> None:
    text = (
        "pytest 8.4.2 (2025-09-03)\n=========================\n\nBug fixes\n---------\n\n"
        "- `#13530 <https://github.com/pytest-dev/pytest/issues/13530>`_: Fixed a crash when using "
        ":func:`pytest.approx` and :class:`decimal.Decimal` instances.\n\n"
        "  It only happened with ``FloatOperation`` set.\n\n\n"
        "pytest 6.2.0 (2020-12-12)\n=========================\n\n"
        "Bug fixes\n---------\n\n- `#1 <u>`_: Too old.\n"
    )
    entries = changelogs.pytest_changelog(text, "8.4.2")
    assert len(entries) == 1  # releases before 7.0 are left out
    (card,) = build_cards.cards_of("pytest", entries)
    assert card.title == "Fixed a crash when using `pytest.approx` and `decimal.Decimal` instances"
    assert card.filename == "project_knowledge_fixed-a-crash-when-using-pytest-approx-and-decim.md"
    assert card.updated == "2025-09-03T12:00:00Z"
    assert "`FloatOperation`" in card.body and "pytest 8.4.2 (2025-09-03), bug fixes (#13530)" in card.body


def test_a_pydantic_entry_keeps_the_fact_and_drops_credits_and_bot_bumps() -> None:
    text = (
        "## v2.14.4 (2026-11-19)\n\n### What's Changed\n\n#### Fixes\n\n"
        "* Exclude `InitVar` fields from the schema by [@a](https://x) in [#14223](https://y)\n"
        "* Bump foo from 1 to 2 by [@dependabot](https://x)[bot] in [#1](https://y)\n\n"
        "### New Contributors\n\n* [@a](https://x) made their first contribution in [#14223](https://y)\n"
    )
    (entry,) = changelogs.pydantic_changelog(text, "2.14.4")
    assert entry.text == "Exclude `InitVar` fields from the schema"
    assert entry.refs == ["#14223"] and entry.day == date(2026, 11, 19)


def test_hand_cards_resolve_corrections_by_title(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t.yaml").write_text(
        "- {type: user_preference, title: Use yarn for JS, summary: yarn., body: yarn install.}\n"
        "- {type: correction_feedback, title: pnpm not yarn, summary: pnpm., body: Actually pnpm.,"
        " supersedes: Use yarn for JS}\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(build_cards, "HAND_DIR", tmp_path)
    old, new = build_cards.hand_cards("t")
    assert new.supersedes == old.filename == "user_preference_use-yarn-for-js.md"
    assert old.updated < new.updated  # the later card in the file is the newer one
    (tmp_path / "t.yaml").write_text(
        "- {type: correction_feedback, title: pnpm, summary: s, body: b, supersedes: Nothing like it}\n",
        encoding="utf-8",
    )
    with pytest.raises(SystemExit, match="'Nothing like it', which is no card of this file"):
        build_cards.hand_cards("t")
