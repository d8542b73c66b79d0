"""The streaming figure's reference: its ratio is the median of back-to-back pairs' ratios, and the
reference app receives the very tokens the App is sent.

(tests/bench/stream_reference.py; the figure itself is `python -m tests.bench fig_streaming`.)
"""

from __future__ import annotations

import pytest

from tests.bench.stream_reference import Measured, Pair, pair_up, paired_ratio, run_reference
from tests.bench.stream_script import CHUNK, answer_reply, answer_text, check_received, final_line


def test_the_ratio_is_the_median_of_the_pairs_ratios_not_the_ratio_of_the_medians() -> None:
    pairs = [Pair(100, 100), Pair(120, 40), Pair(300, 600)]  # ratios 1, 3, 0.5

    assert [p.ratio for p in pairs] == [1.0, 3.0, 0.5]
    assert paired_ratio(pairs) == 1.0  # the medians' ratio would be 120 / 100
    assert paired_ratio([Pair(90, 60), Pair(100, 50)]) == pytest.approx(1.75)  # even count: the mean of two


def _spans(*starts: float, value: float = 100.0) -> list[Measured]:
    return [Measured(value, s, s + 1) for s in starts]


def test_pairs_are_formed_in_order_from_streams_run_back_to_back() -> None:
    # reference then App, then App then reference: both orders within a pair are back to back.
    real = [Measured(120, 1, 2), Measured(90, 4, 5), Measured(150, 6, 7)]
    reference = [Measured(60, 0, 1), Measured(45, 2.5, 3.5), Measured(50, 7.5, 8)]

    pairs = pair_up(real, reference)

    assert pairs == [Pair(120, 60), Pair(90, 45), Pair(150, 50)]
    assert paired_ratio(pairs) == 2.0


@pytest.mark.parametrize(
    ("real", "reference", "why"),
    [
        (_spans(10, 12, 14), _spans(0, 2, 4), "every reference stream before every App stream"),
        (_spans(0, 2), _spans(0.5, 3), "a reference stream overlapping its App stream"),
        (_spans(0, 4), _spans(6, 2), "the second pair ran before the first ended"),
        (_spans(0, 2, 4), _spans(1, 3), "one reference stream missing"),
        ([], [], "no stream at all"),
    ],
)
def test_streams_not_run_back_to_back_are_refused_as_pairs(
    real: list[Measured], reference: list[Measured], why: str
) -> None:
    with pytest.raises(ValueError):
        pair_up(real, reference)


async def test_the_reference_app_streams_the_tokens_the_app_is_sent() -> None:
    tokens = 300
    sent = answer_reply(7, tokens).blocks[0].chunks  # what the fake sends the App for answer 7

    run = await run_reference(7, tokens, rate=50_000)

    assert run.received == list(sent)
    assert len(run.received) == tokens and all(len(t) == CHUNK for t in run.received)
    assert "".join(run.received) == answer_text(7, tokens)
    assert answer_text(7, tokens).endswith(final_line(7))
    check_received(run.received, 7, tokens)  # the check both apps' streams pass in the bench
    with pytest.raises(RuntimeError):
        check_received(run.received, 8, tokens)
    assert run.cpu_per_1k_ms > 0  # timed up to the frame that showed the last line
    assert run.last_token_ms >= 0
