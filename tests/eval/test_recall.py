"""The eval harness (tests/eval/recall.py): its figures are the stated shares, recall is measured
against the index a Run's prompt has, and its command line says what is wrong in one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.eval import recall
from tests.eval.dataset import load_questions
from tests.eval.recall import Result, figures


def _r(
    kind: str, rank: int | None = None, named: tuple[str, ...] = (), good: int = 0, in_index: bool = False
) -> Result:
    return Result("q", "user", kind, "dev", rank, 1.0, list(named), good, in_index)


def test_figures_are_the_stated_shares() -> None:
    f = figures(
        [
            _r("on", rank=1, named=("a", "b"), good=1),
            _r("on", rank=3, named=(), in_index=True),
            _r("on", rank=None, named=("c",), good=0),
            _r("none", named=("d",)),
            _r("off"),
            _r("off", named=("e", "f", "g")),
        ]
    )
    assert f.questions == {"on": 3, "none": 1, "off": 2, "on, answer not in the index": 2}
    assert (f.search["hit@1"], f.search["hit@5"], f.search["hit@10"]) == (1 / 3, 2 / 3, 2 / 3)
    assert f.search["MRR@10"] == pytest.approx((1 + 1 / 3) / 3)
    assert f.recall["fires, on-topic"] == 2 / 3
    assert (f.recall["fires, no-answer"], f.recall["fires, off-topic"]) == (1.0, 0.5)
    assert f.recall["precision, on-topic"] == 1 / 3  # 1 answering card of 3 named
    assert f.recall["precision, all"] == 1 / 7  # and the 4 named for no-answer/off-topic questions
    assert f.recall["names an answer (answer not in the index)"] == 1 / 2
    assert f.recall["cards named per on-topic question"] == 1.0
    assert f.recall["cards named per no-answer/off-topic question"] == 4 / 3
    assert math.isnan(figures([_r("off")]).search["hit@1"])  # no on-topic question: no share


@pytest.mark.timeout(60)
def test_recall_is_measured_against_the_prompts_index() -> None:
    questions = [q for q in load_questions() if q.store == "user" and q.kind == "on"]
    results, latency = recall.run(questions, log=False)
    assert latency["user"]["cards"] == 271 and latency["user"]["questions"] == len(questions)
    # The user store alone mostly fits the index: a Run recalls none of what its index shows.
    assert sum(r.answer_in_index for r in results) > len(results) // 2
    assert all(r.named_in_index == 0 for r in results)
    assert any(r.named for r in results)


def test_a_subset_is_a_workspace_a_kind_or_the_guard() -> None:
    qs = load_questions()
    assert {q.store for q in recall.select(qs, "all", "click")} == {"click"}
    assert {(q.kind, q.split) for q in recall.select(qs, "held-out", "none")} == {("none", "held-out")}
    guard = recall.guard_set(qs)
    assert guard == recall.guard_set(list(reversed(qs)))  # fixed whatever the file's order
    assert {(q.store, q.split) for q in guard} == {("pytest", "dev")}
    with pytest.raises(SystemExit, match="unknown subset 'clik': a workspace"):
        recall.select(qs, "all", "clik")


@pytest.mark.timeout(60)
def test_the_command_prints_the_table_and_writes_finite_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "figures.json"
    assert recall.main(["--subset", "pytest", "--split", "held-out", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert table.startswith("| | held-out |") and "| search hit@5 |" in table and "| pytest | 958 |" in table
    data = json.loads(
        out.read_text(encoding="utf-8"), parse_constant=lambda c: pytest.fail(f"{c} in the JSON")
    )
    assert set(data["figures"]) == {"held-out"} and data["results"]
    assert all(r["split"] == "held-out" and r["store"] == "pytest" for r in data["results"])
