"""The ranked prompt budget (memory/store/ranking.py, index.merge_index_lines, prompt_index):
which cards the prompt's index keeps when they do not all fit, and how they are shown."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.constants import INDEX_FILE, INDEX_MAX_BYTES, INDEX_MAX_LINES, Level, NoteType
from memory.grounding.usage import CardUse
from memory.model import NoteMeta
from memory.store.frontmatter import dump_note
from memory.store.index import format_index_line, index_keys, merge_index_lines, parse_index_lines
from memory.store.ranking import RankedCard, rank_order
from memory.store.stores import MemoryStores
from tests.support.memtools import make_env

K = NoteType.PROJECT_KNOWLEDGE


def _meta(
    title: str = "T", type_: NoteType = K, updated: str = "2026-01-01T00:00:00Z", pinned: bool = False
) -> NoteMeta:
    return NoteMeta(
        title=title,
        summary="",
        type=type_,
        created="2026-01-01T00:00:00Z",
        updated=updated,
        source="seed",
        pinned=pinned,
    )


def _card(name: str, **kw: object) -> RankedCard:
    stale = bool(kw.pop("stale", False))
    return RankedCard(filename=name, meta=_meta(**kw), stale=stale)  # type: ignore[arg-type]


def _names(
    cards: list[RankedCard], use: dict[str, CardUse] | None = None, keep: tuple[str, ...] = ()
) -> list[str]:
    return [cards[i].filename for i in rank_order(cards, use or {}, keep)]


def test_pinned_first_whatever_the_name() -> None:
    cards = [_card("a.md"), _card("zz.md", pinned=True), _card("m.md", type_=NoteType.CORRECTION_FEEDBACK)]
    assert _names(cards)[0] == "zz.md"


def test_corrections_and_preferences_rank_above_knowledge() -> None:
    cards = [
        _card("a.md"),
        _card("b.md", type_=NoteType.USER_PREFERENCE),
        _card("c.md", type_=NoteType.CORRECTION_FEEDBACK),
    ]
    assert _names(cards) == ["b.md", "c.md", "a.md"]


def test_more_reads_then_later_last_read_rank_higher() -> None:
    cards = [_card("a.md"), _card("b.md"), _card("c.md"), _card("d.md")]
    use = {
        "b.md": CardUse(reads=1, last_read="2026-02-01T00:00:00Z"),
        "c.md": CardUse(reads=5, last_read="2026-01-01T00:00:00Z"),
        "d.md": CardUse(reads=1, last_read="2026-03-01T00:00:00Z"),
    }
    assert _names(cards, use) == ["c.md", "d.md", "b.md", "a.md"]


def test_newer_updated_ranks_higher_and_the_name_breaks_ties() -> None:
    cards = [_card("b.md"), _card("a.md"), _card("c.md", updated="2026-05-01T00:00:00Z")]
    assert _names(cards) == ["c.md", "a.md", "b.md"]


def test_stale_below_fresh_even_when_read_more() -> None:
    cards = [_card("a.md", stale=True), _card("b.md")]
    assert _names(cards, {"a.md": CardUse(reads=9, last_read="2026-05-01T00:00:00Z")}) == ["b.md", "a.md"]


def test_keep_holds_the_session_s_shown_cards_below_pinned_only() -> None:
    cards = [_card("a.md", type_=NoteType.CORRECTION_FEEDBACK), _card("b.md"), _card("c.md", pinned=True)]
    use = {"a.md": CardUse(reads=9, last_read="2026-05-01T00:00:00Z")}
    assert _names(cards, use, keep=("b.md",)) == ["c.md", "b.md", "a.md"]


def _write(stores: MemoryStores, level: Level, name: str, meta: NoteMeta, body: str = "body") -> None:
    folder = stores.store(level).dir
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(dump_note(meta, body))


def _big_store(tmp_path: Path, n: int = 400) -> MemoryStores:
    stores = make_env(tmp_path)
    for i in range(n):
        _write(stores, Level.PROJECT, f"project_knowledge_c{i:04d}.md", _meta(f"Card {i}"))
    return stores


def _shown_names(text: str) -> list[str]:
    return [k.split("/", 1)[1] for k in index_keys(text)]


def test_the_prompt_shows_the_best_cards_in_file_order_and_counts_the_rest(tmp_path: Path) -> None:
    stores = _big_store(tmp_path)
    _write(stores, Level.PROJECT, "project_knowledge_zzzz.md", _meta("Pinned last", pinned=True))
    _write(stores, Level.PROJECT, "correction_feedback_zz.md", _meta("Fix", NoteType.CORRECTION_FEEDBACK))
    stores.record_read("project", "project_knowledge_c0399.md")
    pi = stores.prompt_index()
    names = _shown_names(pi.text)
    assert "project_knowledge_zzzz.md" in names and "correction_feedback_zz.md" in names
    assert "project_knowledge_c0399.md" in names
    assert names == sorted(names)  # file order, not rank order
    total = 402
    assert len(pi.shown) + len(pi.left_out) == total
    m = re.search(r"\((\d+) more notes not shown \((\d+) project\);", pi.text)
    assert m is not None and int(m.group(1)) == len(pi.left_out) == int(m.group(2)) > 0
    assert "search_memory" in pi.text


def test_keep_keeps_a_session_s_index_stable_when_another_card_is_read(tmp_path: Path) -> None:
    stores = _big_store(tmp_path)
    first = stores.prompt_index()
    hidden = first.left_out[-1].split("/", 1)[1]
    for _ in range(3):
        stores.record_read("project", hidden)
    assert f"project/{hidden}" in stores.prompt_index().shown  # a new session would show it
    assert stores.prompt_index(keep=first.shown).shown == first.shown  # this one does not change


def test_memory_md_on_disk_stays_sorted_by_filename_with_every_card(tmp_path: Path) -> None:
    stores = _big_store(tmp_path, 300)
    _write(stores, Level.PROJECT, "project_knowledge_zzzz.md", _meta("Pinned last", pinned=True))
    stores.rebuild_indexes()
    lines = parse_index_lines((stores.project.dir / INDEX_FILE).read_text(encoding="utf-8"))
    names = [re.search(r"\(([^()]+\.md)\)$", ln).group(1) for ln in lines]  # type: ignore[union-attr]
    assert len(names) == 301 and names == sorted(names)


_LINE = st.builds(
    lambda t, s: (t, s),
    st.text(alphabet=st.characters(min_codepoint=0x61, max_codepoint=0x7A), min_size=1, max_size=60),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=300),
)


def _section(level: str, items: list[tuple[str, str]]) -> list[str]:
    return [format_index_line(K, t, s, f"{level}_knowledge_{i:05d}.md") for i, (t, s) in enumerate(items)]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(_LINE, max_size=400), st.lists(_LINE, max_size=400), st.randoms(use_true_random=False))
def test_the_budget_is_never_exceeded_and_the_overflow_count_is_exact(
    p_items: list[tuple[str, str]], u_items: list[tuple[str, str]], rnd: object
) -> None:
    p, u = _section("project", p_items), _section("user", u_items)
    ranks = (list(range(len(p))), list(range(len(u))))
    rnd.shuffle(ranks[0])  # type: ignore[attr-defined]
    rnd.shuffle(ranks[1])  # type: ignore[attr-defined]
    text = merge_index_lines(p, u, ranks)
    assert text.count("\n") + 1 <= INDEX_MAX_LINES and len(text.encode("utf-8")) <= INDEX_MAX_BYTES
    shown = set(text.splitlines())
    kept_p, kept_u = [ln for ln in p if ln in shown], [ln for ln in u if ln in shown]
    m = re.search(r"\((\d+) more notes? not shown \(([^)]*)\);", text)
    if len(kept_p) + len(kept_u) == len(p) + len(u):
        assert m is None
        return
    assert m is not None and int(m.group(1)) == len(p) + len(u) - len(kept_p) - len(kept_u)
    counts = dict(reversed(part.split(" ")) for part in m.group(2).split(", "))
    assert int(counts.get("project", 0)) == len(p) - len(kept_p)
    assert int(counts.get("user", 0)) == len(u) - len(kept_u)
    # Each section keeps its best-ranked lines: no hidden line outranks a shown one.
    for lines, order, kept in ((p, ranks[0], kept_p), (u, ranks[1], kept_u)):
        assert {lines[j] for j in order[: len(kept)]} == set(kept)
