"""The retrieval eval: the product's search and recall on the labelled stores and questions.

    python -m tests.eval.recall [--split dev|held-out|all] [--subset NAME] [--json FILE]

``make eval-recall`` runs it with both splits. Each workspace (tests/eval/dataset.py) is built
as real stores in a temporary PSEUDOCLAUDE_HOME: the cards written in the exact bytes a
transaction writes (``dump_note``), the project store trusted, then the product's own start-up
path (``refresh_indexes`` rebuilds each MEMORY.md, ``MemorySearch.warm`` builds the search
caches). Each question then goes through the product's code, nothing reimplemented:

* **search**: ``MemorySearch.search(text, limit=10)`` -> hit@1, hit@5, hit@10 and MRR (the
  reciprocal rank of the first answering card, 0 beyond 10) over the on-topic questions; any
  answering card counts;
* **recall**: ``memory_heads`` of app/agent/memory_bridge/heads.py as a session's first Run calls it
  (the Runner's index is ``merged_index()``, nothing recalled yet), so the cards in the prompt's
  index are excluded exactly as a Run excludes them. Reported: how often it fires (names at
  least one card) on on-topic, no-answer and off-topic questions; its precision (the share of
  named cards that answer the question: over on-topic questions, and over all of them, where a
  card named for a no-answer or off-topic question is wrong); the share of on-topic questions
  whose answer is NOT in the prompt's index for which it names an answering card (the count of
  such questions alongside); the average number of cards named;
* **latency**: the search's wall time per question, median and p95, per workspace (its size).

``--subset``: a workspace's name (its questions only), a kind (on, none, off), or ``guard``
(the regression guard's fixed set: tests/unit/memory/search/test_eval_guard.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.eval.dataset import KINDS, WORKSPACES, Card, Question, load_questions, workspace_cards

if TYPE_CHECKING:
    from memory.search.engine import MemorySearch
    from memory.store.stores import MemoryStores

SEARCH_LIMIT = 10
# The regression guard's set: dev questions of one project's workspace, in id-hash order.
GUARD_STORE = "pytest"
GUARD_COUNTS = {"on": 50, "none": 10, "off": 20}


@dataclass
class Result:
    """What the product did with one question."""

    id: str
    store: str
    kind: str
    split: str
    rank: int | None  # 1-based rank of the first answering card in search's top 10
    search_ms: float
    named: list[str]  # the cards recall named (level/filename)
    named_answers: int  # how many of them answer
    answer_in_index: bool  # an answering card is already in the prompt's index
    named_in_index: int = 0  # cards named that the index already shows (a Run never names one)


@dataclass
class Figures:
    questions: dict[str, int] = field(default_factory=dict)
    search: dict[str, float] = field(default_factory=dict)
    recall: dict[str, float] = field(default_factory=dict)


# -- building the stores ------------------------------------------------------------------------


@contextlib.contextmanager
def _private_home() -> Iterator[Path]:
    """A temporary folder with ``home/.PseudoClaude`` as PSEUDOCLAUDE_HOME (restored on exit)."""
    saved = os.environ.get("PSEUDOCLAUDE_HOME")
    root = Path(tempfile.mkdtemp(prefix="pc-eval-"))
    try:
        os.environ["PSEUDOCLAUDE_HOME"] = str(root / "home" / ".PseudoClaude")
        yield root
    finally:
        if saved is None:
            os.environ.pop("PSEUDOCLAUDE_HOME", None)
        else:
            os.environ["PSEUDOCLAUDE_HOME"] = saved
        shutil.rmtree(root, ignore_errors=True)


def _write_cards(folder: Path, cards: Iterable[Card]) -> int:
    """The cards as files, the bytes a transaction writes (memory/store/frontmatter.py)."""
    from memory.constants import NoteType
    from memory.model import NoteMeta
    from memory.store.frontmatter import dump_note

    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for c in cards:
        meta = NoteMeta(
            title=c.title,
            summary=c.summary,
            type=NoteType(c.type),
            created=c.updated,
            updated=c.updated,
            source="eval",
        )
        (folder / c.filename).write_bytes(dump_note(meta, c.body))
        n += 1
    return n


@dataclass
class Workspace:
    name: str
    stores: MemoryStores
    search: MemorySearch
    cards: int  # project + user


def build_workspace(root: Path, name: str, user_written: set[Path]) -> Workspace:
    """A workspace's stores (see the module's docstring); the user store is written once per home."""
    from memory.search.engine import MemorySearch
    from memory.store.stores import MemoryStores

    ws = root / "ws" / name
    (ws / ".git").mkdir(parents=True)
    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    stores = MemoryStores(ws, home)
    stores.trust_project()
    project, user = workspace_cards(name)
    if project:
        _write_cards(stores.project.dir, project)
    if stores.user.dir not in user_written:
        _write_cards(stores.user.dir, user)
        user_written.add(stores.user.dir)
    # What the app does at start: each MEMORY.md rebuilt from the cards, the caches built, and
    # from then on a Run's recall waits at most 0.3 s for a cache (app/agent/runtime.py).
    stores.refresh_indexes()
    search = MemorySearch(stores)
    search.warm()
    search.recall_wait = 0.3
    return Workspace(name, stores, search, len(project) + len(user))


# -- asking the questions ----------------------------------------------------------------------


async def _ask(ws: Workspace, questions: Sequence[Question]) -> list[Result]:
    from app.agent.memory_bridge.heads import memory_heads
    from memory.store.index import index_keys

    # A session's first Run: the Runner starts from the merged index (its system prompt's).
    shown_index = await asyncio.to_thread(ws.stores.merged_index)
    out = []
    for q in questions:
        answers = set(q.answers)
        t = time.perf_counter()
        hits = ws.search.search(q.text, limit=SEARCH_LIMIT)
        ms = 1000 * (time.perf_counter() - t)
        rank = next((i for i, h in enumerate(hits, 1) if h.key in answers), None)
        heads = await memory_heads(ws.stores, ws.search, shown_index, q.text, {})
        in_index = set(index_keys(heads.shown_index))
        out.append(
            Result(
                q.id,
                q.store,
                q.kind,
                q.split,
                rank,
                ms,
                list(heads.recalled),
                sum(k in answers for k in heads.recalled),
                bool(answers & in_index),
                sum(k in in_index for k in heads.recalled),
            )
        )
    return out


def run(questions: Sequence[Question], log: bool = True) -> tuple[list[Result], dict[str, dict[str, float]]]:
    """Every question through the product, workspace by workspace: (results, latency per workspace)."""
    results: list[Result] = []
    latency: dict[str, dict[str, float]] = {}
    by_ws: dict[str, list[Question]] = {}
    for q in questions:
        by_ws.setdefault(q.store, []).append(q)
    with _private_home() as root:
        written: set[Path] = set()
        for name in [w for w in WORKSPACES if w in by_ws]:
            t = time.perf_counter()
            ws = build_workspace(root, name, written)
            built = time.perf_counter() - t
            try:
                found = asyncio.run(_ask(ws, by_ws[name]))
            finally:
                ws.search.close()
            ms = sorted(r.search_ms for r in found)
            latency[name] = {
                "cards": ws.cards,
                "questions": len(found),
                "median_ms": _quantile(ms, 0.5),
                "p95_ms": _quantile(ms, 0.95),
            }
            results += found
            if log:
                print(
                    f"  {name}: {ws.cards} cards built in {built:.1f} s, {len(found)} questions",
                    file=sys.stderr,
                    flush=True,
                )
    return results, latency


def _quantile(values: Sequence[float], q: float) -> float:
    if not values:
        return math.nan
    xs = sorted(values)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]


def _share(n: int, d: int) -> float:
    return n / d if d else math.nan


def figures(results: Sequence[Result]) -> Figures:
    on = [r for r in results if r.kind == "on"]
    none = [r for r in results if r.kind == "none"]
    off = [r for r in results if r.kind == "off"]
    beyond = [r for r in on if not r.answer_in_index]
    named_on = sum(len(r.named) for r in on)
    named_all = sum(len(r.named) for r in results)
    f = Figures()
    f.questions = {
        "on": len(on),
        "none": len(none),
        "off": len(off),
        "on, answer not in the index": len(beyond),
    }
    f.search = {
        "hit@1": _share(sum(r.rank == 1 for r in on), len(on)),
        "hit@5": _share(sum(r.rank is not None and r.rank <= 5 for r in on), len(on)),
        "hit@10": _share(sum(r.rank is not None for r in on), len(on)),
        "MRR@10": sum(1 / r.rank for r in on if r.rank) / len(on) if on else math.nan,
    }
    f.recall = {
        "fires, on-topic": _share(sum(bool(r.named) for r in on), len(on)),
        "fires, no-answer": _share(sum(bool(r.named) for r in none), len(none)),
        "fires, off-topic": _share(sum(bool(r.named) for r in off), len(off)),
        "precision, on-topic": _share(sum(r.named_answers for r in on), named_on),
        "precision, all": _share(sum(r.named_answers for r in on), named_all),
        "names an answer (answer not in the index)": _share(
            sum(r.named_answers > 0 for r in beyond), len(beyond)
        ),
        "cards named per on-topic question": _share(named_on, len(on)),
        "cards named per no-answer/off-topic question": _share(
            sum(len(r.named) for r in none + off), len(none) + len(off)
        ),
    }
    return f


# -- choosing and printing -----------------------------------------------------------------------


def select(questions: Sequence[Question], split: str, subset: str | None) -> list[Question]:
    qs = [q for q in questions if split == "all" or q.split == split]
    if subset is None:
        return qs
    if subset == "guard":
        return [q for q in guard_set(questions) if split in ("all", q.split)]  # dev questions only
    if subset in WORKSPACES:
        return [q for q in qs if q.store == subset]
    if subset in KINDS:
        return [q for q in qs if q.kind == subset]
    raise SystemExit(
        f"unknown subset {subset!r}: a workspace ({', '.join(WORKSPACES)}), a kind "
        f"({', '.join(KINDS)}) or guard"
    )


def guard_set(questions: Sequence[Question]) -> list[Question]:
    """The regression guard's fixed questions: dev questions of GUARD_STORE, by id hash."""
    import hashlib

    pool = sorted(
        (q for q in questions if q.store == GUARD_STORE and q.split == "dev"),
        key=lambda q: hashlib.sha256(q.id.encode()).hexdigest(),
    )
    out: list[Question] = []
    for kind, n in GUARD_COUNTS.items():
        out += [q for q in pool if q.kind == kind][:n]
    return out


def _fmt(v: float, *, ratio: bool = True) -> str:
    """A share with three decimals, a count per question with two; "–" for a share of nothing."""
    if math.isnan(v):
        return "–"
    return f"{v:.3f}" if ratio else f"{v:.2f}"


def table(columns: dict[str, Figures], latency: dict[str, dict[str, float]]) -> str:
    names = list(columns)
    head = f"| | {' | '.join(names)} |\n|---|{'---:|' * len(names)}\n"
    rows = []
    first = next(iter(columns.values()))
    for label in first.questions:
        rows.append(
            f"| questions: {label} | " + " | ".join(str(c.questions[label]) for c in columns.values()) + " |"
        )
    for label in first.search:
        rows.append(
            f"| search {label} | " + " | ".join(_fmt(c.search[label]) for c in columns.values()) + " |"
        )
    for label in first.recall:
        ratio = not label.startswith("cards named")
        rows.append(
            f"| recall {label} | "
            + " | ".join(_fmt(c.recall[label], ratio=ratio) for c in columns.values())
            + " |"
        )
    out = head + "\n".join(rows) + "\n"
    if latency:
        out += (
            "\n| workspace | cards | questions | search median ms | search p95 ms |\n"
            "|---|---:|---:|---:|---:|\n"
        )
        for name, lat in latency.items():
            out += (
                f"| {name} | {lat['cards']:.0f} | {lat['questions']:.0f} | {lat['median_ms']:.1f} | "
                f"{lat['p95_ms']:.1f} |\n"
            )
    return out


def _finite(value: Any) -> Any:
    """``value`` with every NaN (a share of no questions) as None: JSON has no NaN."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.eval.recall", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--split",
        choices=("dev", "held-out", "all"),
        default="all",
        help="which questions (all: dev and held-out, reported apart)",
    )
    ap.add_argument("--subset", metavar="NAME", help="a workspace, a kind (on/none/off) or guard")
    ap.add_argument(
        "--json", type=Path, metavar="FILE", help="write the figures (and each question's result) here"
    )
    args = ap.parse_args(argv)
    questions = select(load_questions(), args.split, args.subset)
    if not questions:
        print(
            f"no questions in the {args.split} split of subset {args.subset!r} (the guard set is dev only)",
            file=sys.stderr,
        )
        return 2
    t = time.perf_counter()
    results, latency = run(questions)
    splits = [s for s in ("dev", "held-out") if any(r.split == s for r in results)]
    columns = {s: figures([r for r in results if r.split == s]) for s in splits}
    print(table(columns, latency))
    print(
        f"{len(results)} questions in {time.perf_counter() - t:.0f} s, commit {_commit() or '?'}",
        file=sys.stderr,
    )
    if args.json is not None:
        payload: dict[str, Any] = {
            "commit": _commit(),
            "split": args.split,
            "subset": args.subset,
            "figures": {s: asdict(f) for s, f in columns.items()},
            "latency": latency,
            "results": [asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(_finite(payload), indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
