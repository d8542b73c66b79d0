"""Search and recall over a workspace's trusted stores, without a model call.

Search ranks the cards holding any query word by FTS5's bm25 (term frequency, card length;
title x3, summary and filename x2, body x1: ``BM25_WEIGHTS``), each card's score raised by up to
``EXACT_BONUS`` (40 %) for the share of the query's words it holds as written rather than only
as their stem; equal scores: a fresh card before a stale one, then the one the model read most,
then the newest ``updated``, then the project store, then the filename. The browser's filter
ranks the cards holding every word (as a prefix) the same way. The ``search_memory`` tool drops
a card whose matched words carry less than ``SEARCH_FLOOR`` (a fifth) of the query's weight,
and says no card matches when none is left.

A query word found in ``df`` of the ``N`` cards weighs its inverse document frequency,
``ln(1 + (N - df + 0.5) / (df + 0.5))``. For recall a word in more than ``max(50, N / 5)``
cards is common and left out altogether, and the words no card holds count in the query's
total, together at most as much as ``RECALL_UNKNOWN`` (one) word no card holds: the message may
be about something else, or chat around its topic. Recall names a card only when

* the query words it holds carry at least ``RECALL_COVER`` (60 %) of the query's weight, a word
  it holds only as its stem counting ``RECALL_STEM_ONLY`` (80 %) of its weight;
* its score (the weights of its words, 1.4 times as much in the title, summary or filename)
  is at least ``0.8 ln(1 + N)`` (``recall_threshold``), about one distinctive word;
* its rank score (that score plus bm25's over the words not common) is within
  ``RECALL_NEAR_BEST`` (90 %) of the store's best card's, the best counting even when the
  prompt's index already shows it;

at most ``RECALL_LIMIT`` (3) cards, the ones covering most of the query first. Tuned on the
retrieval eval's dev questions (README "Retrieval quality").

An untrusted project store is never searched or recalled: its cache is not even built.
Lines come from the card files (``Store.read_note``), never from the cache: the cache only says
which cards to look at.
"""

from __future__ import annotations

import logging
import math
import re
import sqlite3
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from memory.constants import Level
from memory.search.cache import SearchCache
from memory.search.terms import exact_words, fts_phrase, query_terms, valid_text
from memory.store.index import format_index_line, stale_mark
from memory.store.store import StoreError
from memory.store.stores import MemoryStores

__all__ = [
    "EXACT_BONUS",
    "RECALL_COVER",
    "RECALL_LIMIT",
    "RECALL_NEAR_BEST",
    "RECALL_STEM_ONLY",
    "RECALL_UNKNOWN",
    "SEARCH_FLOOR",
    "SEARCH_LIMIT_MAX",
    "Hit",
    "MemorySearch",
    "recall_threshold",
]

log = logging.getLogger(__name__)

# Recall's bars and search's, tuned on the retrieval eval's dev questions (tests/eval/).
RECALL_LIMIT = 3
RECALL_COVER = 0.6  # the share of the query's weight a recalled card's words carry
RECALL_NEAR_BEST = 0.9  # a recalled card's rank score against the store's best card's
RECALL_UNKNOWN = 1.0  # the words no card holds weigh at most this many such words in all
RECALL_STEM_ONLY = 0.8  # a word a card holds only as its stem, in the share it covers
SEARCH_FLOOR = 0.2  # search_memory: a card carrying less of the query's weight is no match
EXACT_BONUS = 0.4  # search: a card holding all the query's words as written scores 40 % more
_EXACT_BODY = 2048  # the body's first bytes looked at for exact words (a card's point is early)
SEARCH_LIMIT_MAX = 50
_BM25_POOL = 200  # the bm25-ranked cards recall ranks, and the filter raises for exact words, per store
_COMMON_SHARE = 5  # a word in more than N / 5 cards is common for recall (never for fewer than 50)
_HEAD_BONUS = (
    1.4  # tuned on the labelled set (tests/bench/fig_scale.py): 1.5 let a rare title word alone pass
)
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
    stale: bool = False
    updated: str = ""  # the card's ``updated`` (RFC 3339 UTC: sorts as it reads)

    @property
    def key(self) -> str:
        return f"{self.level}/{self.filename}"


def recall_threshold(n: int) -> float:
    """The score a card needs to be recalled in a store of ``n`` cards (about one distinctive
    word's weight: ``ln(1 + n)`` is nearly a word no card holds); how much of the query it covers
    is ``RECALL_COVER``'s to judge."""
    return 0.8 * math.log(1.0 + n)


def _idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class _Scored:
    n: int  # cards in the store
    scores: dict[int, float]  # id -> weight of its query words, head columns weighing more
    cover: dict[int, float]  # id -> weight of its query words
    total: float  # the query's weight
    kept: tuple[str, ...] = ()  # the query's terms not left out as common
    held: tuple[tuple[str, float, frozenset[int]], ...] = ()  # (term, weight, ids holding it)

    def share(self, rid: int) -> float:
        return self.cover.get(rid, 0.0) / self.total if self.total > 0 else 0.0


def _order(h: Hit, reads: Mapping[str, int] | None = None) -> tuple[float, bool, int, _Newest, bool, str]:
    """Best score first; equal scores (near-duplicate cards): fresh before stale, then the one
    the model read most (``reads``: ``level/filename`` -> count), then the newest ``updated``,
    then the project store, then the filename."""
    used = reads.get(h.key, 0) if reads else 0
    return (-round(h.score, 9), h.stale, -used, _Newest(h.updated), h.level is not Level.PROJECT, h.filename)


def _exact_in(rx: re.Pattern[str], title: str, summary: str, body: str) -> set[str]:
    """The query's words (``exact_words``' pattern) a card holds as written."""
    return {m.lower() for m in rx.findall(f"{title}\n{summary}\n{body}")}


class _Newest(str):
    """A time stamp that sorts newest first."""

    def __lt__(self, other: str) -> bool:
        return str.__gt__(self, other)

    def __gt__(self, other: str) -> bool:
        return str.__lt__(self, other)


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

    def _scores(self, level: Level, terms: list[str], *, recall: bool) -> _Scored:
        """Each card's score, the weight of the query words it holds, and the query's total;
        for ``recall``, without the common words and with the unknown ones capped."""
        cache = self.cache(level)
        n = cache.count()
        if n == 0 or not terms:
            return _Scored(n, {}, {}, 0.0)
        cap = max(50, n // _COMMON_SHARE) if recall else n
        total = unknown = 0.0
        scores: dict[int, float] = {}
        cover: dict[int, float] = {}
        kept: list[str] = []
        held: list[tuple[str, float, frozenset[int]]] = []
        n_rows, per_term = cache.term_rows([fts_phrase(t) for t in terms], cap)
        for term, (rows, head) in zip(terms, per_term, strict=True):
            df = len(rows)
            if df > cap:
                continue  # common: says nothing about what a card is about
            kept.append(term)
            weight = _idf(n_rows, df)
            if df == 0:
                unknown += weight
                continue
            total += weight
            held.append((term, weight, frozenset(rows)))
            heads = set(head)
            for r in rows:
                scores[r] = scores.get(r, 0.0) + weight * (_HEAD_BONUS if r in heads else 1.0)
                cover[r] = cover.get(r, 0.0) + weight
        # The words no card holds count, at most as much as RECALL_UNKNOWN distinctive words:
        # a message about something else, but also the chat around a topic (names, times).
        total += min(unknown, RECALL_UNKNOWN * math.log(1.0 + n_rows)) if recall else unknown
        return _Scored(n_rows, scores, cover, total, tuple(kept), tuple(held))

    def _hits(
        self,
        level: Level,
        ranked: list[tuple[int, float]],
        limit: int,
        skip: Collection[str] = (),
        seen: Mapping[str, str] | None = None,
    ) -> list[Hit]:
        """The cards behind ``ranked`` ids, read from their files, at most ``limit``."""
        cache = self.cache(level)
        rows = cache.rows([rid for rid, _ in ranked[: max(limit * 4, 20)]])
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
            hit = self._hit(level, name, score)
            if hit is None:
                cache.mark_changed()
                continue
            if seen is not None and seen.get(key) == hit.sha:
                continue
            out.append(hit)
        return out

    def _hit(self, level: Level, name: str, score: float) -> Hit | None:
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
                return Hit(
                    level, name, stale_mark(line, check.reason), score, note.sha256, True, note.meta.updated
                )
        return Hit(
            level=level, filename=name, line=line, score=score, sha=note.sha256, updated=note.meta.updated
        )

    # -- the three uses ------------------------------------------------------------------------

    def search(
        self, query: str, level: Level | str | None = None, limit: int = 10, floor: float = 0.0
    ) -> list[Hit]:
        """Cards holding any word of ``query``, best first by bm25 (the ``search_memory`` tool and
        ``memory search``); with ``floor``, only cards whose words carry at least that share of
        the query's weight. Trusted levels only."""
        limit = max(1, min(int(limit), SEARCH_LIMIT_MAX))
        terms = query_terms(query)
        if not terms:
            return []
        match = " OR ".join(fts_phrase(t) for t in terms)
        found: list[Hit] = []
        for lv in self.levels(level):
            try:
                ranked = self._exact_first(lv, terms, self.cache(lv).bm25(match, max(limit * 2, 20)))
                if floor > 0:
                    scored = self._scores(lv, terms, recall=False)
                    ranked = [(r, s) for r, s in ranked if scored.share(r) >= floor]
                found.extend(self._hits(lv, ranked, limit))
            except _FAILURES as e:
                log.warning("memory search of the %s store failed: %s", lv, e)
        return self._tie_broken(found)[:limit]

    def _tie_broken(self, found: list[Hit]) -> list[Hit]:
        """``found`` in ``_order``; the usage counts are read only when two scores tie."""
        scores = [round(h.score, 9) for h in found]
        reads: dict[str, int] = {}
        if len(set(scores)) < len(scores):
            for lv in {h.level for h in found}:
                try:
                    reads.update(
                        {f"{lv}/{name}": use.reads for name, use in self.stores.usage_of(lv).items()}
                    )
                except _FAILURES as e:  # a signal, never a failure of the search
                    log.warning("memory search read no usage counts of the %s store: %s", lv, e)
        return sorted(found, key=lambda h: _order(h, reads))

    def _exact_first(
        self, level: Level, terms: list[str], ranked: list[tuple[int, float]]
    ) -> list[tuple[int, float]]:
        """``ranked`` again, each card's score raised by up to ``EXACT_BONUS`` for the share of
        the query's words it holds as written, not only as their stem ("calibrate" ahead of
        "calibration" for a query saying "calibrate")."""
        words = [t for t in terms if " " not in t]
        if not words or not ranked:
            return ranked
        texts = self.cache(level).texts(r for r, _ in ranked)
        rx = exact_words(words)
        out = []
        for rid, score in ranked:
            title, summary, body = texts.get(rid, ("", "", ""))
            exact = len(_exact_in(rx, title, summary, body[:_EXACT_BODY])) / len(words)
            out.append((rid, score * (1.0 + EXACT_BONUS * exact)))
        out.sort(key=lambda kv: -kv[1])
        return out

    def recall(
        self,
        text: str,
        shown: Collection[str],
        seen: Mapping[str, str] | None = None,
        limit: int = RECALL_LIMIT,
    ) -> list[Hit]:
        """Up to ``limit`` cards not in ``shown`` (the prompt's index, ``level/filename``) that
        ``text`` is about (the rule: the module's docstring), best first; a card in ``seen``
        (key -> sha when recalled) only again once it changed. Trusted levels only."""
        terms = query_terms(text)
        if not terms:
            return []
        found: list[tuple[float, Hit]] = []
        for lv in self.levels():
            if self.recall_wait is not None and not self.cache(lv).ready_within(self.recall_wait):
                # Never built in this process (a store trusted since start, by this window or
                # another): built now in the background, so the next Run recalls from it.
                self.warm_soon([lv])
                log.info("memory recall skipped the %s store this time: its search cache is being built", lv)
                continue
            try:
                found.extend(self._recalled(lv, terms, limit, shown, seen))
            except _FAILURES as e:
                log.warning("memory recall from the %s store failed: %s", lv, e)
        found.sort(key=lambda sh: (-sh[0], _order(sh[1])))
        return [h for _, h in found[:limit]]

    def _recalled(
        self,
        level: Level,
        terms: list[str],
        limit: int,
        shown: Collection[str],
        seen: Mapping[str, str] | None,
    ) -> list[tuple[float, Hit]]:
        """(share of the query covered, hit) of the cards of one store recall names."""
        scored = self._scores(level, terms, recall=True)
        bar = recall_threshold(scored.n)
        able = {r for r, s in scored.scores.items() if s >= bar and scored.share(r) >= RECALL_COVER}
        if not able:
            return []  # most messages: no card could be named, no ranking needed
        able = self._as_written(level, scored, able)
        if not able:
            return []
        match = " OR ".join(fts_phrase(t) for t in scored.kept)
        bm25 = dict(self.cache(level).bm25(match, _BM25_POOL))
        rank = sorted(((r, s + bm25.get(r, 0.0)) for r, s in scored.scores.items()), key=lambda kv: -kv[1])
        best = rank[0][1]
        # The best card's rank counts even when the index shows it: a card well below it is
        # not what the message is about.
        passing = [(r, s) for r, s in rank[:limit] if s >= RECALL_NEAR_BEST * best and r in able]
        hits = self._hits(level, passing, limit, skip=shown, seen=seen)
        ids = {r: scored.share(r) for r, _ in passing}
        names = self.cache(level).ids_of(h.filename for h in hits)
        return [(ids.get(names.get(h.filename, -1), 0.0), h) for h in hits]

    def _as_written(self, level: Level, scored: _Scored, able: set[int]) -> set[int]:
        """The cards of ``able`` still covering ``RECALL_COVER`` of the query when a word they
        hold only as its stem counts ``RECALL_STEM_ONLY`` of its weight ("manager" is not
        "manage", "difference" not "differ")."""
        words = [t for t, _, _ in scored.held if " " not in t]
        if not words:
            return able
        rx = exact_words(words)
        out = set()
        for rid, (title, summary, body) in self.cache(level).texts(able).items():
            exact = _exact_in(rx, title, summary, body)
            got = sum(
                w * (1.0 if " " in t or t in exact else RECALL_STEM_ONLY)
                for t, w, rows in scored.held
                if rid in rows
            )
            if scored.total > 0 and got / scored.total >= RECALL_COVER:
                out.add(rid)
        return out

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
                thread = threading.Thread(
                    target=self._build, args=(lv, cache), name=f"search-build-{lv}", daemon=True
                )
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

    def filter_keys(self, text: str, level: Level | str) -> dict[str, float] | None:
        """The card browser's filter box: the ``level/filename`` of the cards holding every word
        of ``text`` as a prefix, best first, each with its score as search ranks it (bm25, the
        exact words ahead of their stems); None when the level cannot be searched (untrusted)."""
        lv = Level(level)
        if lv not in self.levels():
            return None
        terms = query_terms(text) or [w for w in valid_text(text).lower().split() if w]
        if not terms:
            return None
        match = " AND ".join(fts_phrase(t, prefix=True) for t in terms)
        cache = self.cache(lv)
        try:
            ranked = cache.bm25(match, 1_000_000)
            # Only the best get the exact-word raise: it never lifts a card past 1.4 times its
            # score, so those below the pool stay below it.
            head = self._exact_first(lv, terms, ranked[:_BM25_POOL])
            ranked = head + ranked[_BM25_POOL:]
            rows = cache.rows([rid for rid, _ in ranked])
            return {f"{lv}/{rows[rid][1]}": score for rid, score in ranked if rid in rows}
        except _FAILURES as e:
            # The cache already rebuilt itself or moved to memory; this is what is left.
            log.warning("memory filter of the %s store failed: %s", lv, e)
            return None
