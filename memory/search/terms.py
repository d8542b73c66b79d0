"""Words of a query or a card, as the search cache indexes and matches them (DESIGN §15).

The cache's FTS5 tokenizer (``porter unicode61``) splits on anything but letters and digits and
stems English words, so "calibrate" finds "calibration". A CJK run has no spaces to split on:
each of its characters is spaced apart on both sides (indexed text and query), and a query's
run becomes the phrases of its character pairs.
"""

from __future__ import annotations

import itertools
import re
import unicodedata

__all__ = ["MAX_QUERY_TERMS", "STOPWORDS", "fts_phrase", "query_terms", "spaced", "valid_text"]

MAX_QUERY_TERMS = 32

# Words that say nothing about what a card is about (a user message is mostly these).
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each few for from
    further get got had has have having he her here hers him his how i if in into is it its itself
    just let like me more most my no nor not now of off on once only or other our ours out over own
    please same she should so some such than thank thanks that the their them then there these they
    this those through to too under until up us use used using very want was we were what when where
    which while who whom why will with would you your yours yes ok okay know tell make need see look
    one two way thing things something anything""".split()
)

_WORD_RE = re.compile(r"[^\W_]+")
_CJK_RE = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff])")


def _is_cjk(word: str) -> bool:
    return bool(_CJK_RE.match(word))


def valid_text(text: str) -> str:
    """``text`` as valid Unicode: a lone surrogate (from a hostile file name or a broken paste)
    becomes U+FFFD instead of failing in SQLite's encoder."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def spaced(text: str) -> str:
    """``text`` with every CJK character set apart, as the cache indexes it."""
    return _CJK_RE.sub(r" \1 ", text)


def query_terms(text: str) -> list[str]:
    """The distinct words of a query worth matching, in order, at most MAX_QUERY_TERMS: lower
    case, without stop words and one-letter words; a CJK run gives its character pairs, each a
    two-character phrase (``"配 置"``), or its one character."""
    norm = unicodedata.normalize("NFKC", valid_text(text)).lower()
    out: list[str] = []
    run: list[str] = []

    def add(term: str) -> None:
        if term not in out and len(out) < MAX_QUERY_TERMS:
            out.append(term)

    def flush() -> None:
        if len(run) == 1:
            add(run[0])
        for a, b in itertools.pairwise(run):
            add(f"{a} {b}")
        run.clear()

    for word in _WORD_RE.findall(spaced(norm)):
        if _is_cjk(word):
            run.append(word)
            continue
        flush()
        if len(word) >= 2 and word not in STOPWORDS:
            add(word)
    flush()
    return out


def fts_phrase(term: str, *, prefix: bool = False) -> str:
    """A term as an FTS5 string (quoted: a query's words never become FTS syntax)."""
    quoted = '"' + term.replace('"', '""') + '"'
    return quoted + "*" if prefix else quoted
