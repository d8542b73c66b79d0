"""The prompt's index as entries (memory/store/index.py): the text rendered from them is the
text ``merge_index_lines`` makes of the same lines (whose bytes test_index.py and test_ranking.py
pin), cut included; a store over the budget says which cards are out and how many pins."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.constants import INDEX_MAX_LINES, Level, NoteType
from memory.model import NoteMeta
from memory.store.frontmatter import dump_note
from memory.store.index import (
    SectionLine,
    format_index_line,
    index_cut,
    index_fits,
    merge_index_lines,
    render_entries,
    section_entries,
    stale_mark,
    stale_text,
)
from memory.store.stores import MemoryStores
from tests.support.memtools import make_env

_META = {"created": "2026-01-01T00:00:00Z", "updated": "2026-01-01T00:00:00Z"}


def _section(cards: list[tuple[int, bool, bool]], kind: NoteType) -> list[SectionLine]:
    """One level's section: per card its summary's length, whether it is pinned and stale."""
    out: list[SectionLine] = []
    for i, (size, pinned, stale) in enumerate(cards):
        name = f"{kind.value}_c{i:04d}.md"
        meta = NoteMeta(title=f"Card {i}", summary="s" * size, type=kind, pinned=pinned, **_META)
        line = format_index_line(kind, meta.title, meta.summary, name)
        why = stale_text("Makefile changed") if stale else None
        out.append((line if why is None else stale_mark(line, "Makefile changed"), (name, meta, stale), why))
    return out


# Sections of any size up to past the line budget, so about half the indexes are cut.
_CARDS = st.integers(0, 260).flatmap(
    lambda n: st.lists(st.tuples(st.integers(0, 200), st.booleans(), st.booleans()), min_size=n, max_size=n)
)


@settings(max_examples=60, deadline=None)
@given(_CARDS, _CARDS, st.randoms(use_true_random=False))
def test_the_text_rendered_from_entries_is_the_merged_text_of_their_lines(
    project: list[tuple[int, bool, bool]], user: list[tuple[int, bool, bool]], rnd: object
) -> None:
    p, u = _section(project, NoteType.PROJECT_KNOWLEDGE), _section(user, NoteType.USER_PREFERENCE)
    p_lines, u_lines = [x[0] for x in p], [x[0] for x in u]
    ranks = (list(range(len(p))), list(range(len(u))))
    for order in ranks:
        rnd.shuffle(order)  # type: ignore[attr-defined]
    pins = ([i for i, c in enumerate(project) if c[1]], [i for i, c in enumerate(user) if c[1]])
    if index_fits(p_lines, u_lines):
        kept: tuple[set[int] | None, set[int] | None] = (None, None)
    else:
        p_kept, u_kept = index_cut(p_lines, u_lines, ranks, pins)
        kept = (set(p_kept), set(u_kept))
    entries = [*section_entries(Level.PROJECT, p, kept[0]), *section_entries(Level.USER, u, kept[1])]
    assert render_entries(entries) == merge_index_lines(p_lines, u_lines, ranks, pins)
    assert [e.stale is not None for e in entries] == [c[2] for c in project + user]


def _write(stores: MemoryStores, level: Level, name: str, title: str, *, pinned: bool) -> None:
    folder = stores.store(level).dir
    folder.mkdir(parents=True, exist_ok=True)
    meta = NoteMeta(title=title, type=NoteType.PROJECT_KNOWLEDGE, pinned=pinned, source="seed", **_META)
    (folder / name).write_bytes(dump_note(meta, "body\n"))


def test_a_store_over_the_budget_says_which_cards_are_out_and_how_many_pins(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    n, pinned = INDEX_MAX_LINES + 30, INDEX_MAX_LINES + 10  # more pins than the budget holds
    for i in range(n):
        _write(stores, Level.PROJECT, f"project_knowledge_c{i:04d}.md", f"Card {i:04d}", pinned=i < pinned)
    merged = stores.merged_entries()
    out = [e for e in merged.entries if not e.in_prompt]
    assert merged.left_out == len(out) > n - pinned
    assert not any(e.in_prompt for e in merged.entries[pinned:])  # pins rank first
    assert merged.pinned_left_out == sum(e.pinned for e in out) == merged.left_out - (n - pinned)
    lines = merged.text.split("\n")
    assert lines[1:-2] == [e.line for e in merged.entries if e.in_prompt]
    assert lines[-1] == (
        f"({merged.left_out} more notes not shown ({merged.left_out} project); "
        "search_memory finds them by topic, "
        'and read_memory with filename "MEMORY.md" and level "project" or "user" lists them all, paged with '
        f"offset and limit; {merged.pinned_left_out} pinned notes did not fit.)"
    )
    prompt = stores.prompt_index()
    assert prompt.text == merged.text == stores.merged_index()
    assert (len(prompt.left_out), len(prompt.pinned_left_out)) == (merged.left_out, merged.pinned_left_out)
    assert prompt.shown == {f"project/{e.filename}" for e in merged.shown}
