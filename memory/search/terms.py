"""Words of a query or a card, as the search cache indexes and matches them.

The cache's FTS5 tokenizer (``porter unicode61``) splits on anything but letters and digits and
stems English words, so "calibrate" finds "calibration". A CJK run has no spaces to split on:
each of its characters is spaced apart on both sides (indexed text and query), and a query's
run becomes the phrases of its character pairs.
"""

from __future__ import annotations

import itertools
import re
import unicodedata

__all__ = ["MAX_QUERY_TERMS", "STOPWORDS", "exact_words", "fts_phrase", "query_terms", "spaced", "valid_text"]

MAX_QUERY_TERMS = 32

# True function words only (articles, pronouns, be/have/do, conjunctions, the commonest
# prepositions, question words, the chat's fillers: "again", "just", "ok"): they say nothing
# about what a card is about. Content words that merely look small ("like", "make", "would",
# "up", "during") stay: a word in many cards weighs little anyway (its inverse document frequency).
STOPWORDS = frozenset(
    """a an the i me my mine myself we us our ours you your yours he him his she her hers it its
    itself they them their theirs this that these those who whom whose which what how when where
    why am is are was
    were be been being do does did doing have has had having and or but nor if so than as of to
    in on at by for from with into about please thanks thank again also just very too really ok
    okay yes hi hello hey""".split()
)

_WORD_RE = re.compile(r"[^\W_]+")
# A name or code identifier: words joined by _ . - / : (snake_case, dotted.path, --flag-name,
# file.name, a 3.14 version). Matched as such too: the phrase of its words, rarer than each word.
_IDENT_RE = re.compile(r"[^\W_]+(?:[_.\-/:]+[^\W_]+)+")
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
    """The distinct words of a query worth matching, in order, at most MAX_QUERY_TERMS: first
    each name or identifier as the phrase of its words (``max_length`` -> ``"max length"``,
    ``3.9`` -> ``"3 9"``), then the words, lower case, without stop words and one-letter words;
    a CJK run gives its character pairs, each a two-character phrase (``"配 置"``), or its one
    character."""
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

    for ident in _IDENT_RE.findall(norm):
        parts = _WORD_RE.findall(spaced(ident))
        if not any(_is_cjk(p) for p in parts) and any(len(p) > 1 or p.isdigit() for p in parts):
            add(" ".join(parts))
    for word in _WORD_RE.findall(spaced(norm)):
        if _is_cjk(word):
            run.append(word)
            continue
        flush()
        if len(word) >= 2 and word not in STOPWORDS:
            add(word)
    flush()
    return out


def exact_words(words: list[str]) -> re.Pattern[str]:
    """A pattern finding any of ``words`` (a query's, lower case) in a text as written, not a
    longer word holding it nor only its stem: ``{m.lower() for m in p.findall(text)}``."""
    return re.compile(r"(?<![^\W_])(?:" + "|".join(map(re.escape, words)) + r")(?![^\W_])", re.IGNORECASE)


def fts_phrase(term: str, *, prefix: bool = False) -> str:
    """A term as an FTS5 string (quoted: a query's words never become FTS syntax)."""
    quoted = '"' + term.replace('"', '""') + '"'
    return quoted + "*" if prefix else quoted
