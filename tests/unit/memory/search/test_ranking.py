"""The ranking rules of search and recall (memory/search/engine.py, terms.py), one test each:
bm25 (term frequency, card length, column weights), the exact word ahead of its stem, names and
identifiers as such, the tie-break, the stop list, the tool's floor, and recall's bars (the share
of the query covered, the words no card holds, nearness to the best card, at most three)."""

from __future__ import annotations

from pathlib import Path

import pytest

import memory.search.engine as engine
from memory.constants import Level
from memory.search.engine import RECALL_LIMIT, SEARCH_FLOOR, Hit, MemorySearch, _order
from memory.search.terms import STOPWORDS, query_terms
from memory.store.stores import MemoryStores
from tests.support.memtools import make_env, write_note

# Filler cards: a store of some size, so a word in one or two cards is rare (weighs much) and
# the filler's own words are common.
_FILLER = "the build runs the tests and the linter on every commit of the branch"


def _store(
    tmp_path: Path, cards: dict[str, tuple[str, str]], filler: int = 40
) -> tuple[MemoryStores, MemorySearch]:
    stores = make_env(tmp_path)
    for i in range(filler):
        write_note(stores, Level.PROJECT, f"project_knowledge_filler-{i:03d}.md", f"Filler {i}", _FILLER)
    for name, (title, body) in cards.items():
        write_note(stores, Level.PROJECT, name, title, body)
    return stores, MemorySearch(stores)


def _names(hits: list[Hit]) -> list[str]:
    return [h.filename.removeprefix("project_knowledge_").removesuffix(".md") for h in hits]


def test_search_weighs_term_frequency_and_card_length(tmp_path: Path) -> None:
    long_tail = " ".join(f"unrelated{i}" for i in range(200))
    _, search = _store(
        tmp_path,
        {
            "project_knowledge_once-long.md": ("Notes", f"the gateway is set up here. {long_tail}"),
            "project_knowledge_often.md": ("Notes too", "gateway gateway: the gateway retries the gateway"),
            "project_knowledge_once-short.md": ("More notes", "the gateway"),
        },
    )
    # Three times in a short body, then once in a short body, then once in a long one.
    assert _names(search.search("gateway")) == ["often", "once-short", "once-long"]
    search.close()


def test_a_title_match_outranks_a_body_match(tmp_path: Path) -> None:
    _, search = _store(
        tmp_path,
        {
            "project_knowledge_body.md": ("Release notes", "the quota of the runners was raised"),
            "project_knowledge_title.md": ("Runner quota", "raised in March for the runners"),
        },
    )
    assert _names(search.search("quota"))[:2] == ["title", "body"]
    search.close()


def test_the_exact_word_ranks_ahead_of_its_stem(tmp_path: Path) -> None:
    # Porter stems "calibrate" and "calibration" alike: both cards match, the one saying the
    # query's own word first, whatever the file order.
    _, search = _store(
        tmp_path,
        {
            "project_knowledge_a-calibration.md": ("Sensor notes", "the calibration of the sensor"),
            "project_knowledge_b-calibrate.md": ("Sensor notes", "calibrate the sensor"),
        },
    )
    assert _names(search.search("calibrate sensor")) == ["b-calibrate", "a-calibration"]
    assert _names(search.search("calibration sensor")) == ["a-calibration", "b-calibrate"]
    search.close()


def test_identifiers_and_versions_are_matched_as_such(tmp_path: Path) -> None:
    assert query_terms("is max_length checked on 3.9?")[:2] == ["max length", "3 9"]
    assert query_terms("set --no-color in pyproject.toml")[:2] == ["no color", "pyproject toml"]
    assert "e g" not in query_terms("e.g. this")  # initials are no name
    _, search = _store(
        tmp_path,
        {
            "project_knowledge_apart.md": (
                "Length notes",
                "the max of a list; its length is checked elsewhere",
            ),
            "project_knowledge_ident.md": ("Field notes", "max_length is checked before the model is built"),
        },
    )
    assert _names(search.search("where is max_length checked"))[0] == "ident"
    search.close()


def test_equal_scores_put_the_card_the_model_read_most_first(tmp_path: Path) -> None:
    # Two cards of the same words (a near-duplicate): the one read more often ranks first,
    # whatever the file order; the same in the browser's filter.
    stores, search = _store(
        tmp_path,
        {
            "project_knowledge_a-twin.md": ("Deploy twin", "deploy with the blue green script"),
            "project_knowledge_b-twin.md": ("Deploy twin", "deploy with the blue green script"),
        },
    )
    assert _names(search.search("blue green deploy")) == ["a-twin", "b-twin"]
    for _ in range(2):
        stores.record_read(Level.PROJECT, "project_knowledge_b-twin.md")
    assert _names(search.search("blue green deploy")) == ["b-twin", "a-twin"]
    search.close()


def test_the_browsers_filter_ranks_its_cards_as_search_does(tmp_path: Path) -> None:
    _, search = _store(
        tmp_path,
        {
            "project_knowledge_body.md": ("Release notes", "the quota of the runners was raised"),
            "project_knowledge_often.md": ("Notes", "quota quota: the quota of the quota"),
            "project_knowledge_title.md": ("Runner quota", "raised in March for the runners"),
        },
    )
    found = search.filter_keys("quota", "project")
    assert found is not None
    ranked = [k.removeprefix("project/") for k, _ in sorted(found.items(), key=lambda kv: -kv[1])]
    assert ranked == [h.filename for h in search.search("quota")]
    assert [k.removeprefix("project/") for k in found] == ranked  # best first as given
    # Prefixes still match (the box filters as a person types), ranked the same way.
    assert set(search.filter_keys("quot", "project") or ()) == set(found)
    search.close()


def test_equal_scores_put_fresh_before_stale_then_newest_then_filename() -> None:
    def hit(
        name: str, *, stale: bool = False, updated: str = "2026-01-01T00:00:00Z", score: float = 1.0
    ) -> Hit:
        return Hit(Level.PROJECT, name, f"- {name}", score, "sha", stale, updated)

    hits = [
        hit("a-stale.md", stale=True, updated="2026-06-01T00:00:00Z"),
        hit("b-old.md"),
        hit("c-new.md", updated="2026-05-01T00:00:00Z"),
        hit("a-old.md"),
        hit("z-best.md", stale=True, score=2.0),
    ]
    assert [h.filename for h in sorted(hits, key=_order)] == [
        "z-best.md",
        "c-new.md",
        "a-old.md",
        "b-old.md",
        "a-stale.md",
    ]


def test_the_stop_list_keeps_content_words() -> None:
    for word in ("like", "make", "would", "up", "during", "before", "out", "use", "need", "way"):
        assert word not in STOPWORDS
        assert word in query_terms(f"the {word} of it")
    assert query_terms("what is the one that you have") == ["one"]


def test_search_memorys_floor_drops_cards_holding_a_minor_word_only(tmp_path: Path) -> None:
    _, search = _store(
        tmp_path,
        {
            "project_knowledge_docker.md": ("Docker images", "images are rebuilt nightly"),
        },
    )
    query = "rotate the staging postgres credentials docker"
    # Plain search ranks the one card sharing a word; the tool's floor says it is no match.
    assert _names(search.search(query)) == ["docker"]
    assert search.search(query, floor=SEARCH_FLOOR) == []
    assert _names(search.search("rebuild docker images", floor=SEARCH_FLOOR)) == ["docker"]
    search.close()


def test_recall_needs_the_card_to_cover_most_of_the_query(tmp_path: Path) -> None:
    _, search = _store(
        tmp_path,
        {
            "project_knowledge_gateway.md": ("Gateway", "the gateway handshake times out after ten seconds"),
            "project_knowledge_ledger.md": ("Ledger", "the ledger is exported every night"),
        },
    )
    assert _names(search.recall("why does the gateway handshake time out?", ())) == ["gateway"]
    # One rare word of the card among others no card shares: about something else.
    assert search.recall("gateway pricing tiers versus ledger exports quarterly", ()) == []
    search.close()


def test_words_no_card_holds_count_but_only_as_much_as_one_rare_word(tmp_path: Path) -> None:
    _, search = _store(
        tmp_path,
        {
            "project_knowledge_gateway.md": ("Gateway", "the gateway handshake times out after ten seconds"),
        },
    )
    # A word the memory lacks: a message about something else ...
    assert search.recall("gateway kubernetes", ()) == []
    # ... but chat around the topic (many such words) weighs no more than one of them.
    long = "gateway handshake, asked by the team yesterday over lunch on my laptop, colleagues agreed"
    assert _names(search.recall(long, ())) == ["gateway"]
    monkey = engine.RECALL_UNKNOWN
    try:
        engine.RECALL_UNKNOWN = 99.0  # every unknown word counted in full: the chat drowns it
        assert search.recall(long, ()) == []
    finally:
        engine.RECALL_UNKNOWN = monkey
    search.close()


def test_recall_names_only_cards_near_the_best_one_even_when_the_index_shows_it(tmp_path: Path) -> None:
    _, search = _store(
        tmp_path,
        {
            "project_knowledge_best.md": (
                "Gateway handshake timeout",
                "the gateway handshake timeout is ten seconds; gateway handshake",
            ),
            "project_knowledge_weaker.md": ("Notes", "a handshake timeout elsewhere, and a gateway"),
        },
    )
    q = "gateway handshake timeout"
    assert _names(search.recall(q, ()))[0] == "best"
    # The best card already in the prompt's index: the weaker one is not named in its place.
    assert search.recall(q, {"project/project_knowledge_best.md"}) == []
    search.close()


def test_recall_names_at_most_three_cards(tmp_path: Path) -> None:
    assert RECALL_LIMIT == 3
    _, search = _store(
        tmp_path,
        {
            f"project_knowledge_copy-{i}.md": ("Gateway handshake", "the gateway handshake times out")
            for i in range(6)
        },
    )
    assert len(search.recall("gateway handshake", ())) == 3
    search.close()


@pytest.mark.parametrize("message", ["thanks, that works", "ok", "what do you think?"])
def test_recall_ignores_messages_of_function_words_only(tmp_path: Path, message: str) -> None:
    _, search = _store(tmp_path, {"project_knowledge_gateway.md": ("Gateway", "the gateway handshake")})
    assert search.recall(message, ()) == []
    search.close()


def test_a_word_held_only_as_its_stem_covers_less_of_the_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "difference" and "differ" share a stem; the card is not about a difference of protocols.
    _, search = _store(
        tmp_path,
        {
            "project_knowledge_indexes.md": ("Name indexes", "autogenerated names differ between databases"),
        },
    )
    question = "what's the difference between TCP and UDP?"
    assert search.recall(question, ()) == []
    # Counted in full, the stem would carry the message.
    monkeypatch.setattr(engine, "RECALL_STEM_ONLY", 1.0)
    assert _names(search.recall(question, ())) == ["indexes"]
    monkeypatch.undo()
    # The words as written still recall it.
    assert _names(search.recall("why do autogenerated index names differ between databases?", ())) == [
        "indexes"
    ]
    search.close()
