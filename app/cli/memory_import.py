"""``pseudoclaude memory import PATH… [--level L] [--dry-run] [--yes]``: cards from other
agents' instruction files (``CLAUDE.md``, ``AGENTS.md``, ``GEMINI.md``: a card per section) and
memory folders (Claude Code's auto-memory, Codex's memories: a card per note).

Held for review as one job (``memory approve``) unless ``--yes``; ``--dry-run`` shows the cards
and changes nothing. A card that is already there, or already held for review, is not made
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

from app.cli.common import EXIT_ERROR, EXIT_OK, EXIT_USAGE, err, report
from memory.constants import Level
from memory.text.lines import one_line

if TYPE_CHECKING:
    from memory.jobs.importing import Gathered, PlannedCard
    from memory.store.stores import MemoryStores


def add_command(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = cmd("import", "make cards from CLAUDE.md / AGENTS.md / GEMINI.md (a card per section), a Claude Code "
                      "auto-memory folder or a Codex memories folder (a card per note); held for review "
                      "(`memory approve`) unless --yes; the sources are never changed")
    p.add_argument("paths", nargs="+", metavar="PATH", help="a Markdown file or a memory folder")
    p.add_argument("--level", choices=[lv.value for lv in Level],
                   help="the store the cards go to (default: project, or user where the workspace has no project level)")
    p.add_argument("--dry-run", action="store_true", help="print the cards that would be made and change nothing")
    p.add_argument("--yes", action="store_true", help="make the cards now instead of holding them for review")


def _card_lines(p: PlannedCard, level: Level, lead: str) -> str:
    """``<lead> project/<file>  [type] Title``, then its source and its first line of text."""
    card = p.card
    title = p.op.title if p.op is not None and p.op.title else card.title
    first = next((ln for ln in card.body.splitlines() if ln.strip()), "")
    return "\n".join([
        f"{lead}{level.value}/{p.filename}  [{card.type.value}] {one_line(title, 100)}",
        f"    source: {card.provenance}",
        f"    {one_line(first, 100)}",
    ])


def _skip_line(p: PlannedCard) -> str:
    return f"skip [{p.card.type.value}] {one_line(p.card.title, 80)} ({p.card.provenance}): {one_line(p.skip, 200)}"


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
    for p in planned:
        if p.skip:
            print(_skip_line(p))
    if args.dry_run:
        for p in todo:
            print(_card_lines(p, level, "would create "))
        print(f"dry run: {_count(todo)} would be made, {len(planned) - len(todo)} skipped; nothing was changed")
        return code
    if not todo:
        if planned:
            print(f"nothing to import: {_count(planned)} already there or refused")
        return code
    stored = _store(stores, args, todo, planned, gathered.origins, level)
    # A path that failed says so whatever became of the others' cards.
    return code or stored


def _count(cards: Sequence[object]) -> str:
    return f"{len(cards)} card{'s' if len(cards) != 1 else ''}"


def _store(stores: MemoryStores, args: argparse.Namespace, todo: list[PlannedCard], planned: list[PlannedCard],
           origins: list[str], level: Level) -> int:
    # The spool and the transaction load only when cards are stored.
    from memory.jobs.importing import apply_import, hold_import

    if args.yes:
        return report(apply_import(stores, planned, origins))
    job = hold_import(stores, planned, origins)
    print(f"job {job.id}: {job.excerpt()}")
    for p in todo:
        print(_card_lines(p, level, f"{p.index} create "))
    print(f"held for review: `pseudoclaude memory approve {job.id}` makes them (give op numbers to choose), "
          f"`pseudoclaude memory reject {job.id}` drops them")
    return EXIT_OK


HANDLERS: dict[str, Callable[[MemoryStores, argparse.Namespace], int]] = {
    "import": import_cards,
}
