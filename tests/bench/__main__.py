"""`make bench`: every figure, one line each (`name: value  target  ok|MISS`), then the
README's Performance table rewritten between its markers.

    python -m tests.bench                 # all figures (about 25 minutes on 2 cores: fig_worker alone is 8)
    python -m tests.bench fig_stores ...  # only these modules
    python -m tests.bench --no-readme     # do not touch README.md
    python -m tests.bench fig_streaming --rows   # also print its table rows (for a README edit by hand)

Exit status 1 when a figure misses its target (or a module fails to run).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import os
import platform
import sys
import time
import traceback
from pathlib import Path

from tests.bench.common import Figure

MODULES = (
    "fig_latency",
    "fig_streaming",
    "fig_worker",
    "fig_extraction",
    "fig_startup",
    "fig_bigstore",
    "fig_stores",
    "fig_grounding",
    "fig_scale",
    "fig_footprint",
    "bench_compaction",
    "fig_checkpoints",
    "fig_serve_mcp",
    "stress",
)
README = Path(__file__).resolve().parents[2] / "README.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def rows(figures: list[tuple[str, Figure]]) -> list[str]:
    """The table's rows of ``figures``, one a line."""
    out = []
    for module, f in figures:
        detail = f.detail.replace("|", "\\|")
        verdict = "ok" if f.ok else "**MISS**"
        out.append(f"| {f.name} | {f.shown()} | {f.target} | {verdict} | {detail} | `{module}` |")
    return out


def table(figures: list[tuple[str, Figure]], seconds: float) -> str:
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    cores = os.cpu_count() or 1
    head = [
        f"Measured by `make bench` on {when} ({cores} cores, Python {platform.python_version()}; "
        f"{seconds / 60:.1f} minutes). Each module alone: `.venv/bin/python -m tests.bench MODULE`.",
        "",
        "| figure | value | target | | what was measured | module |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    return "\n".join(head + rows(figures))


def write_readme(text: str) -> bool:
    body = README.read_text(encoding="utf-8")
    if START not in body or END not in body:
        return False
    head, rest = body.split(START, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{START}\n{text}\n{END}{tail}", encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench")
    parser.add_argument("modules", nargs="*", help=f"modules to run (default all: {' '.join(MODULES)})")
    parser.add_argument(
        "--no-readme", action="store_true", help="do not rewrite README.md's Performance table"
    )
    parser.add_argument(
        "--rows", action="store_true", help="print the table's rows of the figures measured (a row's detail)"
    )
    args = parser.parse_args(argv)
    chosen = args.modules or list(MODULES)
    unknown = [m for m in chosen if m not in MODULES]
    if unknown:
        parser.error(f"unknown module(s): {', '.join(unknown)}")
    started = time.perf_counter()
    results: list[tuple[str, Figure]] = []
    failed: list[str] = []
    for name in chosen:
        t = time.perf_counter()
        print(f"# {name}", file=sys.stderr, flush=True)
        try:
            module = importlib.import_module(f"tests.bench.{name}")
            for fig in module.figures():
                results.append((name, fig))
                print(fig.line(), flush=True)
        except Exception:
            failed.append(name)
            traceback.print_exc()
            print(f"{name}: could not run (see above)  MISS", flush=True)
        print(f"# {name}: {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    misses = [f for _, f in results if not f.ok]
    print(
        f"{len(results)} figures, {len(misses)} missed, {len(failed)} module(s) failed; "
        f"{seconds / 60:.1f} minutes"
    )
    if args.rows:
        print("\n".join(rows(results)))
    if not args.no_readme and not args.modules:
        if not write_readme(table(results, seconds)):
            print(f"README.md has no {START} … {END} markers: the table was not written", file=sys.stderr)
    return 1 if misses or failed else 0


if __name__ == "__main__":
    sys.exit(main())
