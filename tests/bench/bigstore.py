"""A cloned repository whose project store is large: the fixture of the big-store tests and bench.

``make_big_store(ws, cards=10_001)`` writes a git work tree (a folder with ``.git``) whose
``.PseudoClaude/memory/`` holds ``cards`` valid notes (front matter and body, as
memory/store/store.py parses them), a ``MEMORY.md`` that matches them and the store's ``.gitignore``,
and records no trust: to PseudoClaude it is a store that came with a clone. Each card is
byte for byte what ``memory.frontmatter.dump_note`` writes (the app's own cards, committed). ``index_lines``
instead writes a ``MEMORY.md`` of that many lines (the 100,000-line variant). The files are
written directly (no transaction, no YAML library): ten thousand cards take well under a second.

    python -m tests.bench.bigstore /tmp/big-ws [--cards N] [--index-lines N]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

__all__ = ["CARD_TYPES", "card_filename", "make_big_store"]

CARD_TYPES = ("project_knowledge", "reference_material", "correction_feedback", "user_preference")
STAMP = "2026-01-02T03:04:05Z"


def card_filename(i: int) -> str:
    return f"{CARD_TYPES[i % len(CARD_TYPES)]}_card-{i:05d}.md"


def _card(i: int) -> tuple[str, bytes, str]:
    kind = CARD_TYPES[i % len(CARD_TYPES)]
    name = card_filename(i)
    title = f"Card {i:05d} about module m{i % 97}"
    summary = f"How part {i} of the build works, in one line"
    head = (
        f"---\ntitle: {title}\nsummary: {summary}\ntype: {kind}\n"
        f"created: '{STAMP}'\nupdated: '{STAMP}'\nsource: manual\n---\n"
    )
    body = f"Body of card {i}: run `make part-{i}` before the release.\n"
    line = f"- [{kind}] {title} — {summary} ({name})"
    return name, (head + body).encode(), line


def make_big_store(ws: Path, cards: int = 10_001, *, index_lines: int | None = None) -> Path:
    """Write the workspace (see the module's docstring); returns the project store's folder."""
    (ws / ".git").mkdir(parents=True, exist_ok=True)
    (ws / "README.md").write_text("# a cloned repository with a large memory store\n", encoding="utf-8")
    store = ws / ".PseudoClaude" / "memory"
    store.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    base = str(store)
    for i in range(cards):
        name, data, line = _card(i)
        fd = os.open(f"{base}/{name}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        lines.append(line)
    lines.sort(key=lambda ln: ln.rsplit("(", 1)[1])  # MEMORY.md is sorted by filename
    if index_lines is not None:
        # Lines past the cards name notes that do not exist: a hand-grown or hostile index.
        extra = (
            f"- [project_knowledge] Stale line {k} — gone (project_knowledge_stale-{k:06d}.md)"
            for k in range(max(index_lines - len(lines), 0))
        )
        lines = [*lines[:index_lines], *extra]
    (store / "MEMORY.md").write_text("".join(f"{ln}\n" for ln in lines), encoding="utf-8")
    (store / ".gitignore").write_text(".trash/\n.pc-*\n", encoding="utf-8")
    return store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bigstore")
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--cards", type=int, default=10_001)
    parser.add_argument("--index-lines", type=int, default=None)
    args = parser.parse_args(argv)
    store = make_big_store(args.workspace, args.cards, index_lines=args.index_lines)
    print(f"{args.cards} cards in {store}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
