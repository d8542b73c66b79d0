"""A Run's recall never waits for a first build of the search cache (the app warms the caches after
its first frame): with ``recall_wait`` set, a cache not built yet or held by its build is skipped
this once, and recalled from as soon as it is warm."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from memory.constants import Level
from memory.search.cache import cache_path
from memory.search.engine import MemorySearch
from memory.store.store import StoreError
from tests.support.memtools import make_env, write_note

QUESTION = "How do I calibrate the frobnicator?"


def _search(tmp_path: Path) -> MemorySearch:
    stores = make_env(tmp_path)
    for i in range(60):
        write_note(
            stores, Level.PROJECT, f"project_knowledge_filler-{i:02d}.md", f"Filler {i}", "parser notes"
        )
    write_note(
        stores,
        Level.PROJECT,
        "project_knowledge_lab.md",
        "Lab bench",
        "The frobnicator is calibrated weekly.",
    )
    return MemorySearch(stores)


def test_a_cold_cache_is_skipped_not_built_by_a_runs_recall(tmp_path: Path) -> None:
    search = _search(tmp_path)
    search.recall_wait = 0.3
    cache = search.cache(Level.PROJECT)
    with cache._lock:  # the Run's recall itself never builds: it is skipped while nothing is built
        assert search.recall(QUESTION, ()) == []
    search.warm()
    assert [h.filename for h in search.recall(QUESTION, ())] == ["project_knowledge_lab.md"]
    search.close()


def test_a_cold_cache_a_recall_skipped_is_built_in_the_background_for_the_next(tmp_path: Path) -> None:
    """A store trusted since start (this window or another): nobody warmed its cache, and a Run
    does not wait for a first build; the skipped recall starts it, so the next Run recalls."""
    search = _search(tmp_path)
    search.recall_wait = 0.0
    cache = search.cache(Level.PROJECT)
    with cache._lock:
        assert search.recall(QUESTION, ()) == []
        assert Level.PROJECT in search._building  # started, waiting for the cache
    deadline = time.monotonic() + 30
    while not cache.ready_within(0.05) and time.monotonic() < deadline:
        pass
    assert cache_path(search.stores.paths.home, search.stores.project.dir).exists()
    assert [h.filename for h in search.recall(QUESTION, ())] == ["project_knowledge_lab.md"]
    search.close()


def test_warm_soon_builds_in_a_thread_and_close_does_not_wait_for_it(tmp_path: Path) -> None:
    search = _search(tmp_path)
    cache = search.cache(Level.PROJECT)
    with cache._lock:  # a build that takes long
        search.warm_soon()
        thread = search._building[Level.PROJECT]
        start = time.monotonic()
        search.close()
        assert time.monotonic() - start < 1.0
        assert thread.is_alive()
    thread.join(30)
    assert not thread.is_alive() and cache._db is None  # closed by the build once it ended
    search.warm_soon()  # closed: nothing more starts
    assert search._building == {}


def test_without_recall_wait_recall_builds_what_it_needs(tmp_path: Path) -> None:
    search = _search(tmp_path)  # print mode and the CLI: one turn, so it waits for the build
    assert [h.filename for h in search.recall(QUESTION, ())] == ["project_knowledge_lab.md"]
    search.close()


def test_a_cache_held_by_its_build_is_skipped_within_the_wait(tmp_path: Path) -> None:
    search = _search(tmp_path)
    search.warm()
    search.recall_wait = 0.2
    cache = search.cache(Level.PROJECT)
    held, release = threading.Event(), threading.Event()

    def build() -> None:
        with cache._lock:  # what a (re)build holds while it indexes
            held.set()
            release.wait(30)

    worker = threading.Thread(target=build)
    worker.start()
    try:
        assert held.wait(10)
        start = time.monotonic()
        assert search.recall(QUESTION, ()) == []
        assert time.monotonic() - start < 10  # gave up after its wait, never the build's length
    finally:
        release.set()
        worker.join(10)
    assert [h.filename for h in search.recall(QUESTION, ())] == ["project_knowledge_lab.md"]
    search.close()


def test_a_build_that_failed_midway_is_tried_again_not_trusted(tmp_path: Path, monkeypatch) -> None:
    search = _search(tmp_path)
    cache = search.cache(Level.PROJECT)
    real = type(cache)._update
    calls = {"n": 0}

    def flaky(self, db, listing):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 1:
            raise StoreError("a card could not be read while indexing")
        return real(self, db, listing)

    monkeypatch.setattr(type(cache), "_update", flaky)
    assert search.search("frobnicator") == []  # the failure is logged, never raised
    assert not cache.ready_within(0)
    assert [h.filename for h in search.search("frobnicator")] == ["project_knowledge_lab.md"]
    assert cache.ready_within(0)
    search.close()
