"""Search and recall over a workspace's trusted stores, without a model call (DESIGN §15).

Scoring: each query word found in ``df`` of the ``N`` cards weighs its inverse document
frequency, ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (bm25's), 1.4 times as much when it is in
the card's title, summary or filename. A card's score is the sum over the query words it holds.
Words in more than one card in twenty say little and are left out of recall; a word no card
holds still counts in the query's total (the query asked about something the memory lacks).

Recall names a card only when its score passes ``max(0.55 L, min(0.5 × total, 1.2 L))`` with
``L = ln(1 + N)``: about one distinctive word for a short question, about two for a long message,
and never a card that shares only common words with it. ``search`` (the tool, the CLI) ranks
every card holding any query word, best first.

An untrusted project store is never searched or recalled: its cache is not even built.
Lines come from the card files (``Store.read_note``), never from the cache: the cache only says
which cards to look at.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from memory.constants import Level
from memory.search.cache import SearchCache
from memory.search.terms import fts_phrase, query_terms, valid_text
from memory.store.index import format_index_line, stale_mark
from memory.store.store import StoreError
from memory.store.stores import MemoryStores

__all__ = ["RECALL_LIMIT", "SEARCH_LIMIT_MAX", "Hit", "MemorySearch", "recall_threshold"]

log = logging.getLogger(__name__)

RECALL_LIMIT = 5
SEARCH_LIMIT_MAX = 50
_COMMON_SHARE = 20  # a word in more than N / 20 cards is common (never for fewer than 50)
_HEAD_BONUS = 1.4  # tuned on the labelled set (tests/bench/fig_scale.py): 1.5 let a rare title word alone pass
# What a broken cache or store can raise: search, recall and the filter never let it out.
_FAILURES = (sqlite3.Error, OSError, StoreError)


@dataclass(frozen=True)
class Hit:
    """One card found: its index line (a stale card's with its mark) and why it ranked."""

    level: Level
    filename: str
    line: str
    score: float
    sha: str

    @property
    def key(self) -> str:
        return f"{self.level}/{self.filename}"


def recall_threshold(n: int, total: float) -> float:
    """The score a card needs to be recalled, in a store of ``n`` cards, for a query whose words
    weigh ``total`` (see the module's docstring)."""
    big = math.log(1.0 + n)
    return max(0.55 * big, min(0.5 * total, 1.2 * big))


def _idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


class MemorySearch:
    """The search caches of one workspace's stores (one per store folder), built lazily."""

    def __init__(self, stores: MemoryStores) -> None:
        self.stores = stores
        self._caches: dict[Level, SearchCache] = {}
        self._lock = threading.Lock()
        # Recall's patience for a cache being built (the app warms the caches after its first
        # frame): None waits, as print mode and the CLI do; seconds: a Run does not wait longer
        # and goes without recall from that store this once.
        self.recall_wait: float | None = None
        # The background builds in flight (``warm_soon``), one per level; closed meanwhile: the
        # build closes its cache when it ends.
        self._building: dict[Level, threading.Thread] = {}
        self._closed = False

    def cache(self, level: Level | str) -> SearchCache:
        with self._lock:
            return self._cache_locked(Level(level))

    def _cache_locked(self, lv: Level) -> SearchCache:
        """``cache`` with this object's lock already held."""
        cache = self._caches.get(lv)
        if cache is None or cache.store is not self.stores.store(lv):
            cache = self._caches[lv] = SearchCache(self.stores.paths.home, self.stores.store(lv))
        return cache

    def levels(self, level: Level | str | None = None) -> list[Level]:
        """The levels search may look at: the trusted ones (project first), or the one asked for
        when it is among them."""
        levels = [lv for lv in self.stores.stores if lv is not Level.PROJECT or self.stores.project_trusted]
        levels.sort(key=lambda lv: lv is not Level.PROJECT)
        if level is None:
            return levels
        return [lv for lv in levels if lv is Level(level)]

    def mark_changed(self, level: Level | str | None = None) -> None:
        """Cards changed outside a transaction of this process (the watcher's event)."""
        for lv in [Level(level)] if level is not None else list(Level):
            with self._lock:
                cache = self._caches.get(lv)
            if cache is not None:
                cache.mark_changed()

    def notices(self) -> list[str]:
        """One-line notices since the last call (a damaged cache rebuilt)."""
        out: list[str] = []
        with self._lock:
            caches = list(self._caches.values())
        for cache in caches:
            out.extend(cache.notices)
            cache.notices.clear()
        return out

    def close(self) -> None:
        """Close the caches; one still being built in the background is closed by its build
        (quitting never waits for a first build of a big store)."""
        with self._lock:
            self._closed = True
            building = {self._caches[lv] for lv in self._building if lv in self._caches}
            caches, self._caches = [c for c in self._caches.values() if c not in building], {}
        for cache in caches:
            cache.close()

    # -- scoring -------------------------------------------------------------------------------

    def _scores(self, level: Level, terms: list[str], *, skip_common: bool) -> tuple[int, dict[int, float], float]:
        """(cards in the store, id -> score, the query's total weight)."""
        cache = self.cache(level)
        n = cache.count()
        if n == 0 or not terms:
            return n, {}, 0.0
        cap = max(50, n // _COMMON_SHARE) if skip_common else n
        total = 0.0
        scores: dict[int, float] = {}
        n_rows, per_term = cache.term_rows([fts_phrase(t) for t in terms], cap)
        for rows, head in per_term:
            df = len(rows)
            if df > cap:
                continue  # common: says nothing about what a card is about
            weight = _idf(n_rows, df)
            total += weight
            heads = set(head)
            for r in rows:
                scores[r] = scores.get(r, 0.0) + weight * (_HEAD_BONUS if r in heads else 1.0)
        return n_rows, scores, total

    def _hits(self, level: Level, ranked: list[tuple[int, float]], limit: int, skip: Collection[str] = (),
              seen: Mapping[str, str] | None = None) -> list[Hit]:
        """The cards behind ``ranked`` ids, read from their files, at most ``limit``."""
        cache = self.cache(level)
        rows = cache.rows([rid for rid, _ in ranked[: max(limit * 4, 20)]])
        store = self.stores.store(level)
        out: list[Hit] = []
        for rid, score in ranked:
            if len(out) >= limit:
                break
            row = rows.get(rid)
            if row is None:
                if len(rows) < len(ranked):
                    rows.update(cache.rows([rid]))
                    row = rows.get(rid)
                if row is None:
                    continue
            name = row[1]
            key = f"{level}/{name}"
            if key in skip:
                continue
            hit = self._hit(level, store, name, score)
            if hit is None:
                cache.mark_changed()
                continue
            if seen is not None and seen.get(key) == hit.sha:
                continue
            out.append(hit)
        return out

    def _hit(self, level: Level, store: object, name: str, score: float) -> Hit | None:
        try:
            note = self.stores.store(level).read_note(name)
        except (StoreError, FileNotFoundError, OSError):
            return None
        if note.unparsed:
            return None
        line = format_index_line(note.meta.type, note.meta.title or name, note.meta.summary, name)
        if level is Level.PROJECT and note.meta.cites:
            check = self.stores.layout.grounding.check(level, name, note.meta)
            if check.stale:
                line = stale_mark(line, check.reason)
        return Hit(level=level, filename=name, line=line, score=score, sha=note.sha256)

    # -- the three uses ------------------------------------------------------------------------

    def search(self, query: str, level: Level | str | None = None, limit: int = 10) -> list[Hit]:
        """Cards holding any word of ``query``, best first (the ``search_memory`` tool and
        ``memory search``); trusted levels only."""
        limit = max(1, min(int(limit), SEARCH_LIMIT_MAX))
        terms = query_terms(query)
        found: list[Hit] = []
        for lv in self.levels(level):
            try:
                _, scores, _ = self._scores(lv, terms, skip_common=False)
                ranked = sorted(scores.items(), key=lambda kv: -kv[1])
                found.extend(self._hits(lv, ranked, limit))
            except _FAILURES as e:
                log.warning("memory search of the %s store failed: %s", lv, e)
        found.sort(key=lambda h: (-h.score, h.level is not Level.PROJECT, h.filename))
        return found[:limit]

    def recall(
        self,
        text: str,
        shown: Collection[str],
        seen: Mapping[str, str] | None = None,
        limit: int = RECALL_LIMIT,
    ) -> list[Hit]:
        """Up to ``limit`` cards not in ``shown`` (the prompt's index, ``level/filename``) that
        ``text`` is about, best first; a card in ``seen`` (key -> sha when recalled) only
        again once it changed. Trusted levels only."""
        terms = query_terms(text)
        if not terms:
            return []
        found: list[Hit] = []
        for lv in self.levels():
            if self.recall_wait is not None and not self.cache(lv).ready_within(self.recall_wait):
                # Never built in this process (a store trusted since start, by this window or
                # another): built now in the background, so the next Run recalls from it.
                self.warm_soon([lv])
                log.info("memory recall skipped the %s store this time: its search cache is being built", lv)
                continue
            try:
                n, scores, total = self._scores(lv, terms, skip_common=True)
                threshold = recall_threshold(n, total)
                ranked = sorted(((r, s) for r, s in scores.items() if s >= threshold), key=lambda kv: -kv[1])
                found.extend(self._hits(lv, ranked, limit, skip=shown, seen=seen))
            except _FAILURES as e:
                log.warning("memory recall from the %s store failed: %s", lv, e)
        found.sort(key=lambda h: (-h.score, h.level is not Level.PROJECT, h.filename))
        return found[:limit]

    def warm(self) -> None:
        """Bring every searchable store's cache up to date now (the app, after its first frame:
        a 10,000-card store's first build takes seconds, never a Run's)."""
        for lv in self.levels():
            try:
                self.cache(lv).count()
            except _FAILURES as e:
                log.warning("memory search cache of the %s store not built: %s", lv, e)

    def warm_soon(self, levels: Collection[Level] | None = None) -> None:
        """Build the caches of the searchable ``levels`` (default: all) not built in this process
        yet, each in a background thread of its own, and return at once: a store trusted while
        the app runs is recalled from the next Run on, and a search meanwhile waits for the
        build rather than starting its own."""
        for lv in self.levels():
            if levels is not None and lv not in levels:
                continue
            with self._lock:
                if self._closed or lv in self._building:
                    continue
                cache = self._cache_locked(lv)
                if cache.ready_within(0):
                    continue
                thread = threading.Thread(target=self._build, args=(lv, cache), name=f"search-build-{lv}",
                                          daemon=True)
                self._building[lv] = thread
            thread.start()

    def _build(self, level: Level, cache: SearchCache) -> None:
        try:
            cache.count()
        except _FAILURES as e:
            log.warning("memory search cache of the %s store not built: %s", level, e)
        finally:
            with self._lock:
                self._building.pop(level, None)
                closed = self._closed
            if closed:
                cache.close()

    def filter_keys(self, text: str, level: Level | str) -> set[str] | None:
        """The ``level/filename`` of the cards holding every word of ``text`` as a prefix (the
        card browser's filter box); None when the level cannot be searched (untrusted)."""
        lv = Level(level)
        if lv not in self.levels():
            return None
        terms = query_terms(text) or [w for w in valid_text(text).lower().split() if w]
        if not terms:
            return None
        match = " AND ".join(fts_phrase(t, prefix=True) for t in terms)
        cache = self.cache(lv)
        try:
            ids = cache.rows_matching(match, 1_000_000)
            return {f"{lv}/{row[1]}" for row in cache.rows(ids).values()}
        except _FAILURES as e:
            # The cache already rebuilt itself or moved to memory; this is what is left.
            log.warning("memory filter of the %s store failed: %s", lv, e)
            return None
