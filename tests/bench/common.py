"""What every benchmark of `make bench` shares: the Figure it reports, medians, and a
private environment (a temporary HOME and PSEUDOCLAUDE_HOME, no ANTHROPIC_*/PSEUDOCLAUDE_* of the
person running it).

A figure module (tests/bench/fig_*.py) has ``def figures(runs: int = 5) -> list[Figure]``. The
machines are shared and noisy: measure side by side in one run (alternate the variants, A B A B …),
take medians of at least ``runs`` repetitions, and report ratios rather than lone absolute times
where the target is a ratio.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Figure", "at_least", "at_most", "median", "private_env", "timed"]


@dataclass(frozen=True)
class Figure:
    """One measured figure: ``value`` in ``unit`` against ``target`` (a text such as "≤ 1.05"),
    ``ok`` whether it is met; ``detail`` says what was measured (medians, counts)."""

    name: str
    value: float
    unit: str
    target: str
    ok: bool
    detail: str = ""

    def shown(self) -> str:
        v = self.value
        text = f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}" if abs(v) < 10 else f"{v:,.1f}"
        return f"{text}{'' if self.unit in ('', '×', '%') else ' '}{self.unit}"

    def line(self) -> str:
        return f"{self.name}: {self.shown()}  {self.target}  {'ok' if self.ok else 'MISS'}"


def at_most(name: str, value: float, limit: float, unit: str = "", detail: str = "") -> Figure:
    return Figure(
        name, value, unit, f"≤ {limit:g}{'' if unit in ('', '×', '%') else ' '}{unit}", value <= limit, detail
    )


def at_least(name: str, value: float, limit: float, unit: str = "", detail: str = "") -> Figure:
    return Figure(
        name, value, unit, f"≥ {limit:g}{'' if unit in ('', '×', '%') else ' '}{unit}", value >= limit, detail
    )


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def trimmed_mean(values: Sequence[float], cut: float = 0.1) -> float:
    """The mean of ``values`` without the lowest and the highest ``cut`` of them. For times that
    fall on a screen's frames (bimodal: a turn ends in this frame or the next) the median jumps
    from one mode to the other on a few samples; this moves with the share in each."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = int(len(ordered) * cut)
    kept = ordered[k : len(ordered) - k] or ordered
    return statistics.fmean(kept)


def timed(fn: Callable[[], object]) -> float:
    """Wall seconds of one call."""

    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


@contextlib.contextmanager
def private_env(**extra: str) -> Iterator[Path]:
    """A temporary folder with ``home/`` (HOME) and ``home/.PseudoClaude`` (PSEUDOCLAUDE_HOME) set in
    ``os.environ``, the person's ANTHROPIC_*/PSEUDOCLAUDE_* removed, ``extra`` added; all restored
    (and the folder removed) on exit. Yields the folder."""
    saved = dict(os.environ)
    root = Path(tempfile.mkdtemp(prefix="pc-bench-"))
    try:
        (root / "home").mkdir()
        try:
            for key in list(os.environ):
                if key.startswith(("ANTHROPIC_", "PSEUDOCLAUDE_")):
                    del os.environ[key]
            os.environ.update(
                {
                    "HOME": str(root / "home"),
                    "PSEUDOCLAUDE_HOME": str(root / "home" / ".PseudoClaude"),
                    "PSEUDOCLAUDE_RETRY_DELAY": "0",
                    **extra,
                }
            )
            yield root
        finally:
            os.environ.clear()
            os.environ.update(saved)
    finally:
        _remove(root)


def _remove(root: Path, patience: float = 60.0) -> None:
    """Remove ``root``. A memory worker child draining its last job, or a thread of the app still
    syncing a search cache, may write into it for a few seconds after the app closed: tried
    again until ``patience`` runs out, then said in one line (the figures stand)."""
    deadline = time.monotonic() + patience
    while True:
        try:
            shutil.rmtree(root)
            return
        except FileNotFoundError:
            return
        except OSError as e:
            if time.monotonic() > deadline:
                print(f"  bench: could not remove {root}: {e}", file=sys.stderr, flush=True)
                return
            time.sleep(0.5)
