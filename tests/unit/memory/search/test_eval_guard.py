"""Regression guard for memory search and recall: the retrieval eval's fixed subset
(tests/eval/recall.py ``--subset guard``: the pytest project's workspace, 50 on-topic, 10
no-answer and 17 off-topic dev questions) run through the product's own search and recall.

The floors (and, for how often recall fires where it should not, the ceilings) sit a little
below today's figures (hit@1 0.74, hit@5 0.96, hit@10 1.00, MRR 0.84; recall names an answer
for 0.44 of the questions whose answer is not in the index, precision 0.68 (the same counting
the questions no card answers), fires on none of the no-answer or off-topic questions, 0.56
cards per on-topic question): one or two questions' worth of slack,
so the test fails when the ranking gets worse. Raise them when the ranking improves (the full figures:
``make eval-recall``; README "Retrieval quality").
"""

from __future__ import annotations

import pytest

from tests.eval.dataset import load_questions
from tests.eval.recall import Figures, figures, guard_set, run

# (section, figure) -> the least it may be.
FLOORS = {
    ("search", "hit@1"): 0.70,
    ("search", "hit@5"): 0.92,
    ("search", "hit@10"): 0.96,
    ("search", "MRR@10"): 0.80,
    ("recall", "names an answer (answer not in the index)"): 0.40,
    ("recall", "precision, on-topic"): 0.60,
    ("recall", "precision, all"): 0.58,
}
# (section, figure) -> the most it may be.
CEILINGS = {
    ("recall", "fires, no-answer"): 0.10,
    ("recall", "fires, off-topic"): 0.06,
    ("recall", "cards named per on-topic question"): 0.7,
}


def shortfalls(f: Figures) -> list[str]:
    """Each figure past its floor or ceiling, in one line."""
    out = []
    for (section, name), floor in FLOORS.items():
        value = getattr(f, section)[name]
        if not value >= floor:
            out.append(f"{section} {name}: {value:.3f} < floor {floor:.2f}")
    for (section, name), ceiling in CEILINGS.items():
        value = getattr(f, section)[name]
        if not value <= ceiling:
            out.append(f"{section} {name}: {value:.3f} > ceiling {ceiling:.2f}")
    return out


def _guard_figures() -> Figures:
    questions = guard_set(load_questions())
    results, _ = run(questions, log=False)
    return figures(results)


@pytest.mark.timeout(60)
def test_search_and_recall_stay_above_the_floors() -> None:
    f = _guard_figures()
    # The set itself is what the floors were measured on.
    assert (f.questions["on"], f.questions["none"], f.questions["off"]) == (50, 10, 17)
    assert not shortfalls(f), "retrieval got worse on the eval's guard set:\n" + "\n".join(shortfalls(f))


@pytest.mark.timeout(60)
def test_the_floors_notice_a_worse_ranking(monkeypatch: pytest.MonkeyPatch) -> None:
    # The instrument itself: search's best hits pushed to the end and recall's best card
    # dropped must trip the floors, or they are too loose to guard anything.
    from memory.search.engine import MemorySearch

    search, recall = MemorySearch.search, MemorySearch.recall
    monkeypatch.setattr(MemorySearch, "search", lambda self, *a, **k: search(self, *a, **k)[::-1])
    monkeypatch.setattr(MemorySearch, "recall", lambda self, *a, **k: recall(self, *a, **k)[1:])
    missed = shortfalls(_guard_figures())
    assert any(m.startswith("search hit@1") for m in missed), missed
    assert any(m.startswith("recall names an answer") for m in missed), missed


@pytest.mark.timeout(60)
def test_the_ceilings_notice_a_recall_that_names_every_match(monkeypatch: pytest.MonkeyPatch) -> None:
    # Recall without its bars (no score to reach, no share of the query to cover, no best card
    # to be near) names cards for off-topic messages and mostly wrong ones: the precision floor
    # and the off-topic ceiling must both trip.
    import memory.search.engine as engine

    monkeypatch.setattr(engine, "recall_threshold", lambda n: 0.0)
    monkeypatch.setattr(engine, "RECALL_COVER", 0.0)
    monkeypatch.setattr(engine, "RECALL_NEAR_BEST", 0.0)
    missed = shortfalls(_guard_figures())
    assert any(m.startswith("recall precision, on-topic") for m in missed), missed
    assert any(m.startswith("recall fires, off-topic") for m in missed), missed
