"""The grounded-cards side of ``pseudoclaude memory``: ``list --stale``,
``list --unused DAYS``, ``confirm LEVEL FILE``, and the one-line report of a dropped citation
(shared with print mode's report of a memory job).

Loaded with the other ``memory`` commands' parsers: the stores and the grounding checker load
when a command runs, never here.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import sys
from typing import TYPE_CHECKING

from memory.constants import Level
from memory.text.lines import one_line
from memory.text.names import quote, sanitize_line

if TYPE_CHECKING:
    from memory.grounding.staleness import CardCheck
    from memory.grounding.usage import CardUse
    from memory.model import DroppedCite, Note
    from memory.store.stores import MemoryStores

EXIT_OK, EXIT_ERROR = 0, 1

# More days than this is no real window; the cutoff would also leave datetime's range.
MAX_UNUSED_DAYS = 36_500


def unused_days(v: str) -> int:
    """``--unused DAYS``: a whole number of days, 0 or more (argparse makes the error exit 2)."""
    text = v.strip()
    # isdigit alone takes "²" and other digits int() refuses; "+3" and "3_0" are no day counts.
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"DAYS is a whole number of days, 0 or more, not {quote(v)}")
    n = int(text)
    if n > MAX_UNUSED_DAYS:
        raise argparse.ArgumentTypeError(f"DAYS is at most {MAX_UNUSED_DAYS} (a hundred years), not {n}")
    return n


def add_list_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--stale",
        action="store_true",
        help="only stale cards: project cards whose cited files changed, were renamed or deleted "
        "since the card was written or confirmed (each with the reason)",
    )
    p.add_argument(
        "--unused",
        type=unused_days,
        metavar="DAYS",
        help="only cards the model has not read in the last DAYS days (never read and older than "
        "DAYS days, or last read before then), each with its use; with --stale, both must hold",
    )


def add_confirm_command(p: argparse.ArgumentParser) -> None:
    p.add_argument("level", choices=[lv.value for lv in Level])
    p.add_argument("file", help="the card's filename (see `pseudoclaude memory list`)")


# -- dropped citations ---------------------------------------------------------------------------


def dropped_line(d: DroppedCite) -> str:
    """``op 0: citation '../outside' dropped: '../outside' leaves the workspace through '..'``."""
    return f"op {d.index}: citation {quote(d.cite)} dropped: {one_line(d.reason, 300)}"


# -- list --stale / --unused ---------------------------------------------------------------------


def _stamp(value: str) -> _dt.datetime | None:
    try:
        return _dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.UTC)
    except (TypeError, ValueError):
        return None


def is_unused(note: Note, use: CardUse | None, cutoff: _dt.datetime) -> bool:
    """Not read since ``cutoff``: last read before it, or never read and created at or before it.
    A never-read card whose ``created`` does not parse counts as old: nothing says it is new."""
    if use is not None and use.reads > 0:
        last = _stamp(use.last_read)
        return last is None or last < cutoff
    created = _stamp(note.meta.created)
    return created is None or created <= cutoff


def stale_checks(stores: MemoryStores) -> dict[str, CardCheck]:
    """The project cards that are stale now, by filename."""
    return {name: c for name, c in stores.staleness().items() if c.stale}


def list_filtered(stores: MemoryStores, args: argparse.Namespace) -> int:
    """One line per card that passes the filters: ``LEVEL  FILE  Title — reason · use``."""
    # Loaded with the stores when the command runs (pydantic): not with the parsers.
    from memory.grounding.usage import use_text

    stale = stale_checks(stores) if args.stale else {}
    now = stores.clock().astimezone(_dt.UTC).replace(microsecond=0)
    cutoff = now - _dt.timedelta(days=args.unused) if args.unused is not None else None
    trusted = stores.project_trusted
    shown = 0
    for level, st in stores.stores.items():
        if st.folder_problem() is not None or (args.stale and level is not Level.PROJECT):
            continue
        uses = stores.usage_of(level) if cutoff is not None else {}
        for note in st.notes():
            check = stale.get(note.filename)
            if args.stale and check is None:
                continue
            use = uses.get(note.filename)
            if cutoff is not None and not is_unused(note, use, cutoff):
                continue
            parts = [check.reason] if check is not None else []
            if cutoff is not None:
                parts.append(use_text(use, now))
            untrusted = "  [untrusted]" if level is Level.PROJECT and not trusted else ""
            title = sanitize_line(note.meta.title, 200)
            print(f"{level}  {note.filename}  {title} — {' · '.join(parts)}{untrusted}")
            shown += 1
    if not shown:
        # On stderr: stdout holds only cards, so a script reads an empty list as none.
        what = "stale cards" if args.stale else "cards"
        when = (
            f" unused in the last {args.unused} day{'s' if args.unused != 1 else ''}"
            if cutoff is not None
            else ""
        )
        print(f"pseudoclaude: no {what}{when}", file=sys.stderr)
    return EXIT_OK


def stale_suffix(check: CardCheck | None) -> str:
    """What plain ``memory list`` adds after a stale card's line."""
    return f"  stale: {check.reason}" if check is not None and check.stale else ""


# -- confirm -------------------------------------------------------------------------------------


def confirm(stores: MemoryStores, args: argparse.Namespace) -> int:
    """``memory confirm LEVEL FILE``: the card's citations taken again from the workspace, in a
    manual batch (``memory undo`` reverts it). Errors are StoreError/TransactionError: the
    caller reports them in one line, exit 1."""
    # The cards service (the card editors) loads only for an edit.
    from app.services.cards import CardsService

    result, said = asyncio.run(CardsService(stores, None).confirm_card(args.level, args.file, None))
    for a in result.applied:
        print(f"confirmed {a.level}/{a.filename}")
    for line in said:
        print(f"  {one_line(line, 300)}")
    return EXIT_OK
