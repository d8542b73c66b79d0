"""``memory import`` of a source holding a secret, terminal escapes and a hidden instruction: the
cards are cleaned once, when made (escapes and control characters removed, secrets redacted), so
every preview shows what the transaction writes; the card hiding text from a rendered view carries
the fragment the trust window would show."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory.constants import Level
from memory.extract.importing import document_cards
from memory.jobs.importing import apply_import, plan_import
from memory.store.stores import MemoryStores
from memory.text.markup import card_markup
from tests.support.importdata import (
    HIDDEN_INSTRUCTION,
    HOSTILE_HIDDEN_TITLE,
    HOSTILE_KEY,
    HOSTILE_MD,
    HOSTILE_STRIPPED_TITLES,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "repo"
    (w / ".git").mkdir(parents=True)
    return Path(os.path.realpath(w))


def test_a_card_is_made_as_it_will_be_written() -> None:
    cards = document_cards(HOSTILE_MD, "CLAUDE.md", title="CLAUDE.md")
    assert [c.title for c in cards] == ["Frob", "Build", "Terminal", "Style", "Plain"]
    for card in cards:
        for text in (card.title, card.summary, card.body):
            assert "\x1b" not in text and "\x07" not in text and HOSTILE_KEY not in text
    by_title = {c.title: c for c in cards}
    assert by_title["Frob"].body == "The deploy key is [REDACTED:anthropic_key] for now.\n"
    assert by_title["Build"].body == "Run `make test` before pushing.\n"
    assert by_title["Terminal"].body == "Keep the output short. Really.\n"
    assert [c.title for c in cards if c.stripped] == HOSTILE_STRIPPED_TITLES
    # The hidden instruction is text a person may want: kept, and found by the markup scan.
    assert HIDDEN_INSTRUCTION in by_title[HOSTILE_HIDDEN_TITLE].body


def test_the_plan_previews_exactly_what_the_transaction_writes(ws: Path) -> None:
    stores = MemoryStores(ws)
    cards = document_cards(HOSTILE_MD, "CLAUDE.md", title="CLAUDE.md")
    planned = plan_import(stores, cards, Level.PROJECT)
    assert all(p.op is not None and not p.skip for p in planned)
    # What a preview shows (the card) is the validated op's text: nothing left for the write to change.
    assert [(p.op.title, p.op.content) for p in planned if p.op] == [(c.title, c.body) for c in cards]
    assert {p.card.title: p.markup for p in planned if p.markup} == {
        HOSTILE_HIDDEN_TITLE: ("HTML comment", HIDDEN_INSTRUCTION)
    }

    result = apply_import(stores, planned, ["CLAUDE.md"])
    assert len(result.applied) == 5
    written = {n.filename: n.body for n in stores.notes(Level.PROJECT)}
    assert sorted(written.values()) == sorted(c.body for c in cards)
    # The trust window's count over the written cards is the plan's.
    trust = stores.trust_preview().markup
    assert list(trust.values()) == [p.markup for p in planned if p.markup]
    assert all(card_markup(body) is None for name, body in written.items() if name not in trust)
