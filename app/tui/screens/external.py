"""A card edited in the person's own editor (``$VISUAL``/``$EDITOR``), from the card browser's ``o``.

The editor gets a private copy of the card, never the card itself; when it exits the copy is
checked and applied as one change. An invalid copy can be edited again, and a card changed on
disk meanwhile shows both versions. One card is out at a time. The rounds run in one of the App's
workers, not a screen's: the edit outlives whichever screen is open, and each window it opens is
awaited for its answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from textual.app import SuspendNotSupported

from app.services.cards import CardText, EditBack
from app.tui.screens.memory_views import disk_draft
from memory.text.lines import one_line
from widgets.cards.conflict import ConflictModal
from widgets.cards.draft import CardDraft
from widgets.cards.edit_problem import EditProblemModal

if TYPE_CHECKING:
    from app.services.cards import EditCopy
    from app.tui.screens.common import MemoryControl
    from widgets.cards.card_list import CardRow

__all__ = ["ExternalEditOutcome", "ExternalEdits", "editor_argv"]

GROUP = "cards-edit"


def editor_argv(env: dict[str, str] | None = None) -> list[str] | None:
    """The person's editor as argv: ``$VISUAL``, then ``$EDITOR`` (shell-split: "code -w"), then
    the first of nano/vi found. None when there is none."""
    env = dict(os.environ) if env is None else env
    for var in ("VISUAL", "EDITOR"):
        value = env.get(var, "").strip()
        if value:
            with contextlib.suppress(ValueError):
                argv = shlex.split(value)
                if argv:
                    return argv
    for name in ("nano", "vi"):
        found = shutil.which(name)
        if found:
            return [found]
    return None


@dataclass
class ExternalEditOutcome:
    """A card back from the editor: ``outcome`` for its private copy ``edit``; ``argv`` runs the
    editor again; ``disk`` (a conflict) is the card on disk now as (CardDraft, sha256), None when
    it is gone."""

    edit: EditCopy
    outcome: EditBack
    argv: list[str]
    disk: tuple[CardDraft, str] | None = None


class ExternalEdits:
    """The rounds of one card out in the editor, as one worker: the editor, the copy applied,
    and each window the outcome opens awaited for its answer, which decides the next round."""

    def __init__(self, memory: MemoryControl) -> None:
        self._memory = memory
        self.busy = False  # a card is out in the editor (or its outcome is being decided)

    def _fail(self, text: str) -> None:
        self._memory.flash(text, error=True)
        self.busy = False

    def open(self, row: CardRow) -> None:
        if self.busy:
            self._memory.flash("a card is already open in your editor", error=True)
            return
        argv = editor_argv()
        if argv is None:
            self._memory.flash("no editor: set $EDITOR (or $VISUAL) to open cards in your editor", error=True)
            return
        self.busy = True
        self._memory.run(self._start, row, argv, group=GROUP)

    async def _start(self, row: CardRow, argv: list[str]) -> None:
        try:
            edit = await self._memory.services.cards.start_external_edit(row.level, row.filename)
        except Exception as e:  # the store's one line (not a regular file, gone, too big), OSError
            self._fail(f"not opened: {e}")
            return
        outcome = await self._round(edit, argv)
        while outcome is not None:
            outcome = await self._decide(outcome)

    async def _round(self, edit: EditCopy, argv: list[str]) -> ExternalEditOutcome | None:
        """The editor on the private copy, then the copy checked and applied: what came of it,
        or None when the round failed (said)."""
        cards = self._memory.services.cards
        name = os.path.basename(argv[0])
        try:
            try:
                code = await self._run_editor([*argv, str(edit.path)])
            except SuspendNotSupported:
                await cards.discard_external_edit(edit)
                self._fail("this terminal cannot hand over to an editor: use e to edit the card here")
                return None
            except OSError as e:
                await cards.discard_external_edit(edit)
                self._fail(f"could not run {name}: {e}")
                return None
            refuse = None if code == 0 else f"{name} exited with {code}: nothing was applied"
            outcome = await cards.finish_external_edit(edit, refuse=refuse)
            disk = None
            if outcome.status == "conflict":
                disk = disk_draft(await cards.read_card(edit.level, edit.filename))
        except Exception as e:  # the copy is kept: the person's text is not lost to an I/O error
            self._fail(f"not applied: {type(e).__name__}: {e} (your text is in {edit.path})")
            return None
        return ExternalEditOutcome(edit, outcome, argv, disk)

    async def _run_editor(self, argv: list[str]) -> int:
        app = self._memory.app
        if app.is_headless:
            # Tests: nothing to hand the terminal to; the "editor" is a script.
            done = await asyncio.to_thread(
                subprocess.run, argv, stdin=subprocess.DEVNULL, capture_output=True
            )
            return done.returncode
        with app.suspend():
            return subprocess.run(argv).returncode

    async def _decide(self, message: ExternalEditOutcome) -> ExternalEditOutcome | None:
        """A round's outcome said, or the person's answer to it: the next round's outcome, or
        None once the edit is over."""
        edit, outcome, argv = message.edit, message.outcome, message.argv
        where = f"{edit.level}/{edit.filename}"
        name = os.path.basename(argv[0])
        if outcome.status == "unchanged":
            self._end(edit, f"back from {name}: no changes")
        elif outcome.status == "applied":
            result = outcome.result
            assert result is not None  # an applied copy carries its edit's outcome
            self._end(edit, f"saved {result.level} card {result.filename} from {name} (u undoes)")
            self._memory.after_change((result.level, result.filename))
        elif outcome.status == "invalid":
            return await self._ask_edit_again(edit, argv, outcome.problem, outcome.text, where)
        elif outcome.status == "conflict":
            return await self._ask_conflict(message)
        return None

    async def _ask_edit_again(
        self, edit: EditCopy, argv: list[str], problem: str, text: str, where: str
    ) -> ExternalEditOutcome | None:
        modal = EditProblemModal(one_line(problem, 300), text, where=where)
        choice = await self._memory.app.push_screen_wait(modal)
        if choice == "edit":
            return await self._round(edit, argv)
        self._end(edit, f"discarded your edit: {where} is unchanged")
        return None

    async def _ask_conflict(self, message: ExternalEditOutcome) -> ExternalEditOutcome | None:
        edit, outcome, argv, disk = message.edit, message.outcome, message.argv, message.disk
        f = outcome.fields
        assert f is not None  # a conflict carries the fields read from the copy
        mine = CardDraft(level=f.level, type=f.type, title=f.title, summary=f.summary, body=f.body)
        where = f"{edit.level}/{edit.filename}"
        modal = ConflictModal(mine, disk[0] if disk else None, where=where)
        choice = await self._memory.app.push_screen_wait(modal)
        if choice == "mine":
            return await self._keep_mine(edit, argv, mine, disk, outcome.text)
        if choice == "disk":
            self._end(edit, f"kept {where} as it is on disk; your edit was dropped")
            return None
        problem = "the card changed on disk since it was copied for your editor: not applied"
        return await self._ask_edit_again(edit, argv, problem, outcome.text, where)

    async def _keep_mine(
        self, edit: EditCopy, argv: list[str], mine: CardDraft, disk: tuple[CardDraft, str] | None, text: str
    ) -> ExternalEditOutcome | None:
        """The person's version over the disk's (or as a new card, when the card was deleted)."""
        cards = self._memory.services.cards
        fields = CardText(
            level=mine.level, type=mine.type, title=mine.title, summary=mine.summary, body=mine.body
        )
        try:
            if disk is None:
                result = await cards.save_card(mine, None, None, None)
            else:
                result = await cards.save_card(mine, edit.filename, disk[1], edit.level)
            now = None
            if result.status == "conflict":
                now = disk_draft(await cards.read_card(edit.level, edit.filename))
        except Exception as e:
            self._fail(f"not applied: {type(e).__name__}: {e} (your text is in {edit.path})")
            return None
        status: Literal["applied", "conflict", "invalid"] = (
            "invalid" if result.status == "rejected" else result.status
        )
        outcome = EditBack(status=status, problem=result.reason, fields=fields, result=result, text=text)
        return ExternalEditOutcome(edit, outcome, argv, now)

    def _end(self, edit: EditCopy, text: str) -> None:
        """The edit is over: its private copy goes, the outcome is said."""
        self.busy = False
        self._memory.run(self._discard_copy, edit, group=GROUP)
        self._memory.say(text)

    async def _discard_copy(self, edit: EditCopy) -> None:
        with contextlib.suppress(OSError):
            await self._memory.services.cards.discard_external_edit(edit)
