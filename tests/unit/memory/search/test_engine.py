"""Search, recall and the filter (memory/search/engine.py): untrusted stores never indexed, CJK,
hostile queries, and recall quality on a small generated labelled set."""

from __future__ import annotations

from pathlib import Path

import pytest

import memory.search.engine as engine
from memory.constants import Level
from memory.search.cache import cache_path
from memory.search.engine import MemorySearch
from memory.search.terms import MAX_QUERY_TERMS, query_terms
from tests.bench.fig_scale import labelled_set, quality, write_set
from tests.support.memtools import make_env, write_note


def test_an_untrusted_project_store_is_never_indexed_searched_or_recalled(tmp_path: Path) -> None:
    stores = make_env(tmp_path, trusted=False)
    write_note(stores, Level.PROJECT, "project_knowledge_frob.md", "Frobnicator", "calibrate the frobnicator")
    write_note(stores, Level.USER, "user_preference_frob.md", "Frobnicator too", "the frobnicator, user side")
    search = MemorySearch(stores)
    assert [h.key for h in search.search("frobnicator")] == ["user/user_preference_frob.md"]
    assert search.search("frobnicator", level="project") == []
    assert all(h.level is Level.USER for h in search.recall("how do I calibrate the frobnicator?", ()))
    assert search.filter_keys("frob", "project") is None
    assert search.levels() == [Level.USER]
    # No cache file is even made for it.
    assert not cache_path(stores.paths.home, stores.project.dir).exists()
    assert cache_path(stores.paths.home, stores.user.dir).exists()
    search.close()


def test_cjk_cards_are_found_by_cjk_queries(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    write_note(
        stores, Level.PROJECT, "project_knowledge_cfg.md", "配置文件", "修改配置文件之后需要重启服务。"
    )
    write_note(
        stores, Level.PROJECT, "project_knowledge_db.md", "データベース", "データベースの移行は金曜日に行う。"
    )
    write_note(stores, Level.PROJECT, "project_knowledge_en.md", "English", "nothing in other scripts")
    search = MemorySearch(stores)
    assert [h.filename for h in search.search("怎么修改配置")] == ["project_knowledge_cfg.md"]
    assert [h.filename for h in search.search("データベースの移行")] == ["project_knowledge_db.md"]
    assert set(search.filter_keys("配置", "project") or ()) == {"project/project_knowledge_cfg.md"}
    assert query_terms("配置") == ["配 置"]
    assert query_terms("配") == ["配"]
    search.close()


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '""',
        "'",
        "*",
        "NEAR(",
        "a OR b",
        "frob AND NOT x",
        "title: frob",
        "{title}: x",
        "^frob",
        "frob*",
        "(((",
        "-frob",
        "+",
        "\x00frob",
        "frob\x00",
        "\ud800",
        "🦀" * 50,
        "x" * 10_000,
        " ".join(f"word{i}" for i in range(500)),
        "\u202efrob",
        "NOT",
        "AND OR NOT NEAR",
        "col:umn",
    ],
)
def test_hostile_queries_never_raise_and_never_become_fts_syntax(tmp_path: Path, query: str) -> None:
    stores = make_env(tmp_path)
    write_note(stores, Level.PROJECT, "project_knowledge_frob.md", "Frobnicator", "calibrate the frobnicator")
    search = MemorySearch(stores)
    hits = search.search(query)
    assert all(h.filename == "project_knowledge_frob.md" for h in hits)
    search.recall(query, ())
    found = search.filter_keys(query, "project")
    assert found is None or set(found) <= {"project/project_knowledge_frob.md"}
    assert len(query_terms(query)) <= MAX_QUERY_TERMS
    assert search.notices() == []  # a query never damages the cache
    search.close()


def test_operator_words_are_matched_as_words(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    write_note(stores, Level.PROJECT, "project_knowledge_near.md", "Near misses", "a near miss log")
    write_note(stores, Level.PROJECT, "project_knowledge_other.md", "Other", "unrelated text")
    search = MemorySearch(stores)
    assert [h.filename for h in search.search("NEAR")] == ["project_knowledge_near.md"]
    assert set(search.filter_keys("near*", "project") or ()) == {"project/project_knowledge_near.md"}
    search.close()


def test_recall_quality_on_a_small_labelled_set(tmp_path: Path) -> None:
    """600 cards, 60 targets, 100 unrelated queries (tests/bench/fig_scale.py's generator): the
    targets are in the top 5 and unrelated queries recall nothing. Fails when the threshold
    recalls everything (false positives) or nothing (targets missed)."""
    stores = make_env(tmp_path)
    data = labelled_set(cards=600, targets=60, unrelated=100)
    write_set(stores, data)
    search = MemorySearch(stores)
    found, false = quality(search, data)
    assert found >= 0.9
    assert false <= 0.05
    search.close()


def test_the_quality_test_catches_a_broken_threshold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The labelled set tells a working threshold from one that recalls everything or nothing."""
    stores = make_env(tmp_path)
    data = labelled_set(cards=300, targets=30, unrelated=40)
    write_set(stores, data)
    search = MemorySearch(stores)
    found, false = quality(search, data)
    assert found >= 0.9 and false <= 0.05
    # Every match recalled: no score bar, no share of the query to cover, no best card to be near.
    monkeypatch.setattr(engine, "recall_threshold", lambda n: 0.0)
    monkeypatch.setattr(engine, "RECALL_COVER", 0.0)
    monkeypatch.setattr(engine, "RECALL_NEAR_BEST", 0.0)
    assert quality(search, data)[1] > 0.5
    monkeypatch.setattr(engine, "recall_threshold", lambda n: 1e9)  # no card ever passes
    assert quality(search, data)[0] == 0.0
    search.close()


def test_recall_skips_shown_cards_and_seen_unless_changed(tmp_path: Path) -> None:
    stores = make_env(tmp_path)
    path = write_note(
        stores, Level.PROJECT, "project_knowledge_frob.md", "Frobnicator", "calibrate the frobnicator"
    )
    search = MemorySearch(stores)
    q = "how do I calibrate the frobnicator?"
    (hit,) = search.recall(q, ())
    assert search.recall(q, {hit.key}) == []
    assert search.recall(q, (), seen={hit.key: hit.sha}) == []
    path.write_bytes(path.read_bytes() + b"more\n")
    search.mark_changed()
    (again,) = search.recall(q, (), seen={hit.key: hit.sha})
    assert again.sha != hit.sha
    search.close()


def test_search_at_10000_cards_reads_only_what_it_shows(tmp_path: Path) -> None:
    """Search's CPU per query at 10,000 cards, warm: bm25, the exact-word raise over its pool and
    the ten lines read from their files, never a pass over every card. The bench holds the 10 ms
    target (``fig_scale``); this bound is twice that, for slower machines, and still far below
    what a per-card pass costs (hundreds of ms)."""
    import gc
    import statistics
    import time

    stores = make_env(tmp_path)
    data = labelled_set(cards=10_000, targets=200, unrelated=20)
    write_set(stores, data)
    search = MemorySearch(stores)
    queries = [q for q, _ in data.queries[:30]] + data.unrelated[:10]
    search.search(queries[0])  # builds the cache and warms SQLite's pages
    spent = []
    gc.disable()
    try:
        for q in queries:
            t = time.thread_time()
            assert len(search.search(q)) <= 10
            spent.append(time.thread_time() - t)
    finally:
        gc.enable()
    search.close()
    assert 1000 * statistics.median(spent) <= 20.0, (
        f"median {1000 * statistics.median(spent):.1f} ms CPU per search"
    )
