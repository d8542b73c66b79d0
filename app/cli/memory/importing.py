"""``pseudoclaude memory import PATH… [--level L] [--dry-run] [--yes]``: cards from other
agents' instruction files (``CLAUDE.md``, ``AGENTS.md``, ``GEMINI.md``: a card per section) and
memory folders (Claude Code's auto-memory, Codex's memories: a card per note).

Held for review as one job (``memory approve``) unless ``--yes``; ``--dry-run`` shows the cards
and changes nothing. Every listing shows a card as it will be written (escapes removed, secrets
redacted), the cards hiding text from a rendered view first and counted as the trust window
counts them. A card that is already there, or already held for review, is not made
again. The sources are only read. Exit 2 when a path does not exist, 1 when a source could not be
read as notes or the cards could not be stored, 3 when ``--yes`` had a card refused; the other
paths are imported either way.

Loaded with the other ``memory`` commands' parsers: the Markdown parser, the stores and the spool
load when the command runs, never here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from app.cli.memory.common import EXIT_ERROR, EXIT_OK, EXIT_USAGE, err, report
from memory.constants import Level
from memory.text.lines import one_line

if TYPE_CHECKING:
    from memory.jobs.importing import Gathered, PlannedCard
    from memory.store.stores import MemoryStores

# Said under a card whose source held terminal escapes, control or invisible characters: the card has none.
STRIPPED = "terminal escapes and control or invisible characters of the source were removed"


def add_command(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = cmd(
        "import",
        "make cards from CLAUDE.md / AGENTS.md / GEMINI.md (a card per section), a Claude Code "
        "auto-memory folder or a Codex memories folder (a card per note); held for review "
        "(`memory approve`) unless --yes; the sources are never changed",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a Markdown file or a memory folder")
    p.add_argument(
        "--level",
        choices=[lv.value for lv in Level],
        help="the store the cards go to (default: project, or user where the workspace has no project level)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print the cards that would be made and change nothing"
    )
    p.add_argument("--yes", action="store_true", help="make the cards now instead of holding them for review")


def _card_lines(p: PlannedCard, level: Level, lead: str) -> str:
    """``<lead> project/<file>  [type] Title``, its source, what it hides from a rendered view
    (the fragment on one line, as the trust window shows it), whether escapes were removed, and
    its first line of text: all of it as the card will be written (the validated op)."""
    op = p.op
    title = op.title if op is not None and op.title else p.card.title
    body = op.content if op is not None and op.content is not None else p.card.body
    first = next((ln for ln in body.splitlines() if ln.strip()), "")
    lines = [
        f"{lead}{level.value}/{p.filename}  [{p.card.type.value}] {one_line(title, 100)}",
        f"    source: {p.card.provenance}",
    ]
    if p.markup is not None:
        kind, fragment = p.markup
        lines.append(f"    ⚠ {kind}: {one_line(fragment, 120) or '(no text)'}")
    if p.card.stripped:
        lines.append(f"    {STRIPPED}")
    lines.append(f"    {one_line(first, 100)}")
    return "\n".join(lines)


def _shown_first(todo: Sequence[PlannedCard]) -> list[PlannedCard]:
    """The cards in the order a person should read them: those hiding text from a rendered view
    first, then those whose escapes were removed, then the rest (each group in file order)."""
    return sorted(todo, key=lambda p: (p.markup is None, not p.card.stripped))


def _hidden_summary(todo: Sequence[PlannedCard], where: str = "listed first") -> str:
    """How many of the cards hide text from a rendered view (the trust window's count) and how
    many had escapes removed; "" when none did."""
    hiding = sum(1 for p in todo if p.markup is not None)
    stripped = sum(1 for p in todo if p.card.stripped)
    parts = []
    if hiding:
        parts.append(
            f"{_count(hiding)} {'hold' if hiding != 1 else 'holds'} HTML comments, hidden markup or "
            f"tag-like text that the model reads and a rendered view hides ({where}, with the text)"
        )
    if stripped:
        parts.append(f"terminal escapes and control or invisible characters removed from {_count(stripped)}")
    return "; ".join(parts)


def _skip_line(p: PlannedCard) -> str:
    card = p.card
    return f"skip [{card.type.value}] {one_line(card.title, 80)} ({card.provenance}): {one_line(p.skip, 200)}"


def _problems(gathered: Gathered) -> int:
    """Each path that gave no cards, one line on stderr; the exit code they call for."""
    for notice in gathered.notices:
        err(one_line(notice, 300))
    for problem in gathered.problems:
        err(f"{one_line(problem.path, 200)}: {one_line(problem.reason, 200)}")
    if any(p.usage for p in gathered.problems):
        return EXIT_USAGE
    return EXIT_ERROR if gathered.problems else EXIT_OK


def _level(stores: MemoryStores, args: argparse.Namespace) -> Level:
    if args.level:
        return Level(args.level)
    return Level.PROJECT if stores.has_project_level else Level.USER


def import_cards(stores: MemoryStores, args: argparse.Namespace) -> int:
    # The Markdown parser, the spool and the store's planner load only when an import runs.
    from memory.jobs.importing import gather, level_problem, plan_import

    level = _level(stores, args)
    problem = level_problem(stores, level)
    if problem is not None:
        err(problem)
        return EXIT_ERROR
    gathered = gather(args.paths, stores.paths.workspace)
    code = _problems(gathered)
    planned = plan_import(stores, gathered.cards, level)
    todo = [p for p in planned if p.op is not None and not p.skip]
    skipped = [_skip_line(p) for p in planned if p.skip]
    if args.dry_run:
        # The cards that hide text come before anything else: they are what to read first.
        for p in _shown_first(todo):
            print(_card_lines(p, level, "would create "))
        for line in skipped:
            print(line)
        hidden = _hidden_summary(todo)
        print(
            f"dry run: {_count(len(todo))} would be made, {len(skipped)} skipped; "
            f"{hidden + '; ' if hidden else ''}nothing was changed"
        )
        return code
    for line in skipped:
        print(line)
    if not todo:
        if planned:
            print(f"nothing to import: {_count(len(planned))} already there or refused")
        return code
    stored = _store(stores, args, todo, planned, gathered.origins, level)
    # A path that failed says so whatever became of the others' cards.
    return code or stored


def _count(n: int) -> str:
    return f"{n} card{'s' if n != 1 else ''}"


def _store(
    stores: MemoryStores,
    args: argparse.Namespace,
    todo: list[PlannedCard],
    planned: list[PlannedCard],
    origins: list[str],
    level: Level,
) -> int:
    # The spool and the transaction load only when cards are stored.
    from memory.jobs.importing import apply_import, hold_import

    if args.yes:
        code = report(apply_import(stores, planned, origins))
        hidden = _hidden_summary(todo, "listed below")
        if hidden:
            print(f"of these {_count(len(todo))}: {hidden}")
        for p in todo:
            if p.markup is not None:
                where, text = p.markup
                print(f"⚠ {level.value}/{p.filename}: {where}: {one_line(text, 120) or '(no text)'}")
        return code
    hidden = _hidden_summary(todo)
    job = hold_import(stores, planned, origins)
    print(f"job {job.id}: {job.excerpt()}")
    for p in _shown_first(todo):
        print(_card_lines(p, level, f"{p.index} create "))
    if hidden:
        print(f"of these {_count(len(todo))}: {hidden}")
    print(
        f"held for review: `pseudoclaude memory approve {job.id}` makes them (give op numbers to choose), "
        f"`pseudoclaude memory reject {job.id}` drops them"
    )
    return EXIT_OK


HANDLERS: dict[str, Callable[[MemoryStores, argparse.Namespace], int]] = {
    "import": import_cards,
}
