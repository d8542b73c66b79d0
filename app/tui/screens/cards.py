"""The card browser and the card editor with their actions.

``CardsScreen`` and ``EditorScreen`` are the widgets' screens (widgets/cards/, which only draw and
post) handling their own messages: new, edit, delete, move, undo, ``$EDITOR`` (app/tui/screens/
external.py) and save. Slow work runs as the App's workers through the ``MemoryScreens``
controller; what they read comes back to the screen as a message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from textual import on
from textual.message import Message

from app.tui.messages import CardsLoaded, ChatNote, EditorOutcome, MemoryFlash, SearchFound
from app.tui.screens.common import FLASH_WIDTH
from app.tui.screens.memory_views import MERGE_MARK, disk_draft, merge_draft
from memory.text.lines import one_line
from widgets.cards.browser import CardBrowser
from widgets.cards.card_list import CardRow
from widgets.cards.conflict import ConflictChoice, ConflictModal
from widgets.cards.draft import CardDraft, ConflictSide
from widgets.cards.editor import CardEditor
from widgets.cards.resolve import ResolveChoice, ResolveModal

if TYPE_CHECKING:
    from app.services.cards import CardChange
    from app.tui.screens.common import MemoryControl
    from memory.model import Conflict, Rejection
    from memory.text.conflict_sides import SideName

__all__ = ["MERGE_LEFT", "CardsScreen", "EditorScreen", "flash_lines"]

DEFAULT_TYPE = "project_knowledge"  # a new card's type when the browser shows every type
MAX_MORE_LINES = 6  # lines under an outcome (dropped citations, what a confirmation changed)
MERGE_LEFT = "merge the other version in, then delete from its ▼▼▼ line down"


def cites_of(row: CardRow) -> tuple[str, ...]:
    return tuple(c.spec for c in row.cites)


async def save_resolution(memory: MemoryControl, row: CardRow, draft: CardDraft, sha256: str) -> CardChange:
    """A conflicted card's resolution as ONE manual update of it (``sha256``: the file as read).
    The chosen version's citations replace the card's when they differ; its pin, when it differs,
    follows as its own batch (an update op carries no pin)."""
    cards = memory.services.cards
    cites = draft.cites if draft.cites != cites_of(row) else None
    result = await cards.save_card(draft, row.filename, sha256, row.level, cites)
    if result.status == "applied" and draft.pinned != row.pinned:
        await cards.pin_card(result.level, result.filename, draft.pinned, None)
    return result


async def confirm_and_say(
    memory: MemoryControl,
    level: str,
    filename: str,
    sha256: str | None,
    *,
    before: Callable[[], None] | None = None,
) -> str | None:
    """A person's "still true" for a card: confirmed off the loop, then said (with what changed)
    and the views refreshed; ``before`` runs first on success. The one-line problem, or None."""
    try:
        _, said = await memory.services.cards.confirm_card(level, filename, sha256)
    except Exception as e:  # StoreError: one line (changed since read, does not parse, …)
        return f"not confirmed: {e}"
    if before is not None:
        before()
    flash_lines(memory, f"confirmed {level} card {filename}: still true (u undoes)", said)
    memory.after_change((level, filename))
    return None


def flash_lines(memory: MemoryControl, head: str, more: list[str], *, error: bool = False) -> None:
    """An outcome and its detail lines (one line each): on the open browser, else in the chat.
    Posted, so a worker may call it."""
    lines = [one_line(m, FLASH_WIDTH) for m in more[:MAX_MORE_LINES]]
    if len(more) > MAX_MORE_LINES:
        lines.append(f"+{len(more) - MAX_MORE_LINES} more")
    browser = memory.browser
    if browser is not None:
        browser.post_message(MemoryFlash("\n".join([one_line(head, FLASH_WIDTH), *lines]), error, "cards"))
    else:
        for i, line in enumerate([head, *lines]):
            memory.post(ChatNote(one_line(line, FLASH_WIDTH), error=error and i > 0))


@dataclass
class SideNotTaken(Message):
    """A side taken in the resolution view was not saved: the card changed on disk since it was
    read (``disk``: it now, or None when gone) and the person decides again."""

    row: CardRow
    draft: CardDraft
    disk: tuple[CardDraft, str] | None


class CardsScreen(CardBrowser):
    def __init__(self, memory: MemoryControl, *, levels: tuple[str, ...]) -> None:
        super().__init__(levels=levels)
        self._memory = memory

    # -- what the controller read ----------------------------------------------------------------

    @on(CardsLoaded)
    def _show_rows(self, message: CardsLoaded) -> None:
        self.show(message.rows, note=message.note)
        if message.select is not None:
            self.select(*message.select)

    @on(MemoryFlash)
    def _show_flash(self, message: MemoryFlash) -> None:
        head, *more = message.text.split("\n")  # flash_lines' detail lines
        self.flash(head, error=message.error, more=more)

    # -- new and edit: the editor ----------------------------------------------------------------

    @on(CardBrowser.NewCard)
    def _new_asked(self, message: CardBrowser.NewCard) -> None:
        message.stop()
        levels = self._memory.services.cards.levels
        level = message.level if message.level in levels else levels[0]
        draft = CardDraft(level=level, type=message.type or DEFAULT_TYPE, title="", summary="", body="")
        self._memory.open_editor(draft)

    @on(CardBrowser.EditCard)
    def _edit_asked(self, message: CardBrowser.EditCard) -> None:
        message.stop()
        row = message.row
        if row.conflict is not None:
            self._open_resolution(row)
            return
        draft = CardDraft(
            level=row.level,
            type=row.type,
            title=row.title,
            summary=row.summary,
            body=row.body,
            cites=tuple(c.spec for c in row.cites),
            pinned=row.pinned,
        )
        self._memory.open_editor(draft, filename=row.filename, sha256=row.sha256)

    # -- a conflicted card: take a side, or edit the merge ---------------------------

    def _open_resolution(self, row: CardRow) -> None:
        conflict = row.conflict
        if conflict is None:
            return

        def chosen(choice: ResolveChoice | None) -> None:
            if choice in ("ours", "theirs"):
                # Named as the view named it: "this machine" / "the remote" after a sync.
                first, second = conflict.names()
                side, name = (conflict.ours, first) if choice == "ours" else (conflict.theirs, second)
                self._memory.run(self._take_side, row, name, side, group="cards-edit")
            elif choice == "edit":
                self._memory.open_editor(
                    merge_draft(conflict), filename=row.filename, sha256=row.sha256, resolving=row
                )

        self.app.push_screen(ResolveModal(conflict, where=f"{row.level}/{row.filename}"), callback=chosen)

    async def _take_side(self, row: CardRow, name: SideName, side: ConflictSide) -> None:
        memory = self._memory
        try:
            errors = await memory.services.cards.check_card(side.draft)
            if errors:
                problems = " · ".join(f"{field}: {why}" for field, why in errors.items())
                memory.flash(
                    f"not resolved: the version of {name.name} cannot be saved as it is ({problems}); "
                    "edit the merge instead",
                    error=True,
                )
                return
            result = await save_resolution(memory, row, side.draft, row.sha256)
            if result.status == "conflict":
                disk = disk_draft(await memory.services.cards.read_card(row.level, row.filename))
                if disk is None or disk[1] != row.sha256:
                    self.post_message(SideNotTaken(row, side.draft, disk))
                    return
        except Exception as e:  # StoreError, OSError: one line, nothing lost
            memory.flash(f"not resolved: {e}", error=True)
            memory.after_change()
            return
        if result.status != "applied":
            memory.flash(f"not resolved: {result.reason}", error=True)
            memory.after_change()
            return
        label = f" ({name.detail})" if name.detail else ""
        undo = "u undoes its pin, then it" if side.draft.pinned != row.pinned else "u undoes"
        memory.flash(f"resolved {row.level} card {result.filename}: took {name.possessive}{label} ({undo})")
        memory.after_change((row.level, result.filename))

    @on(SideNotTaken)
    def _side_not_taken(self, message: SideNotTaken) -> None:
        row, disk = message.row, message.disk

        def chosen(choice: ConflictChoice | None) -> None:
            if choice == "mine" and disk is not None:
                self._memory.run(self._take_again, row, message.draft, disk[1], group="cards-edit")
            elif choice == "mine":
                self._memory.flash("the card was deleted meanwhile: n creates it again", error=True)
            self._memory.after_change()

        modal = ConflictModal(message.draft, disk[0] if disk else None, where=f"{row.level}/{row.filename}")
        self.app.push_screen(modal, callback=chosen)

    async def _take_again(self, row: CardRow, draft: CardDraft, sha256: str) -> None:
        memory = self._memory
        try:
            result = await save_resolution(memory, row, draft, sha256)
        except Exception as e:
            memory.flash(f"not saved: {e}", error=True)
            return
        if result.status == "applied":
            memory.flash(f"saved {row.level} card {result.filename} over the change on disk (u undoes)")
        else:
            memory.flash(f"not saved: {result.reason}", error=True)
        memory.after_change((row.level, row.filename))

    @on(CardBrowser.OpenExternal)
    def _external_asked(self, message: CardBrowser.OpenExternal) -> None:
        message.stop()
        self._memory.external.open(message.row)

    @on(CardBrowser.Undo)
    def _undo_asked(self, message: CardBrowser.Undo) -> None:
        message.stop()
        self._memory.undo()

    # -- "still true" ----------------------------------------------------------------

    @on(CardBrowser.ConfirmCard)
    def _confirm_asked(self, message: CardBrowser.ConfirmCard) -> None:
        message.stop()
        self._memory.run(self._confirm, message.row, group="cards-edit")

    async def _confirm(self, row: CardRow) -> None:
        memory = self._memory
        problem = await confirm_and_say(memory, row.level, row.filename, row.sha256)
        if problem is not None:
            memory.flash(problem, error=True)
            memory.after_change()

    # -- pin and the filter box through the search index ------------------------------

    @on(CardBrowser.PinCard)
    def _pin_asked(self, message: CardBrowser.PinCard) -> None:
        message.stop()
        self._memory.run(self._pin, message.row, message.pinned, group="cards-edit")

    async def _pin(self, row: CardRow, pinned: bool) -> None:
        memory = self._memory
        what = "pinned" if pinned else "unpinned"
        try:
            result = await memory.services.cards.pin_card(row.level, row.filename, pinned, row.sha256)
        except Exception as e:  # StoreError: one line (changed since read, gone, …)
            memory.flash(f"not {what}: {e}", error=True)
            memory.after_change()
            return
        problems: list[Conflict | Rejection] = [*result.conflicts, *result.rejected]
        if problems:
            memory.flash(f"not {what}: {problems[0].reason}", error=True)
        elif not result.applied:
            memory.flash(f"{row.level} card {row.filename} already was {what}")
        else:
            first = "it goes into the prompt's index first; " if pinned else ""
            memory.flash(f"{what} {row.level} card {row.filename} ({first}u undoes)")
        memory.after_change((row.level, row.filename))

    @on(CardBrowser.SearchAsked)
    def _search_asked(self, message: CardBrowser.SearchAsked) -> None:
        message.stop()
        # Exclusive: a new keystroke cancels the wait for the last one's answer.
        self._memory.run(self._search, message.text, group="cards-search", exclusive=True)

    async def _search(self, text: str) -> None:
        try:
            keys = await self._memory.services.cards.filter_keys(text)
        except Exception as e:  # the substring filter stays: say once why the index did not answer
            self._memory.flash(f"the search index did not answer: {e}", error=True)
            return
        self.post_message(SearchFound(text, keys))

    @on(SearchFound)
    def _search_found(self, message: SearchFound) -> None:
        self.set_search(message.text, message.keys)

    # -- delete and move -------------------------------------------------------------------------

    @on(CardBrowser.DeleteCard)
    def _delete_asked(self, message: CardBrowser.DeleteCard) -> None:
        message.stop()
        self._memory.run(self._delete, message.row, group="cards-edit")

    async def _delete(self, row: CardRow) -> None:
        memory = self._memory
        try:
            result = await memory.services.cards.delete_card(row.level, row.filename, row.sha256)
        except Exception as e:
            memory.flash(f"not deleted: {e}", error=True)
            return
        if result.status == "applied":
            memory.flash(f"deleted {row.level} card {row.filename} (it is in the store's .trash/; u undoes)")
        else:
            memory.flash(f"not deleted: {result.reason}", error=True)
        memory.after_change()

    @on(CardBrowser.MoveCard)
    def _move_asked(self, message: CardBrowser.MoveCard) -> None:
        message.stop()
        row = message.row
        if row.level == "user" and "project" not in self._memory.services.cards.levels:
            self._memory.flash("this workspace has no project level to move the card to", error=True)
            return
        self._memory.run(self._move, row, group="cards-edit")

    async def _move(self, row: CardRow) -> None:
        memory = self._memory
        try:
            result = await memory.services.cards.move_card(row.level, row.filename, row.sha256)
        except Exception as e:
            memory.flash(f"not moved: {e}", error=True)
            return
        if result.status == "applied":
            memory.flash(f"moved to {result.level}: {result.filename} (u undoes)")
            memory.after_change((result.level, result.filename))
        else:
            memory.flash(f"not moved: {result.reason}", error=True)
            memory.after_change()


class EditorScreen(CardEditor):
    """The card editor; Ctrl+S checks and saves the card (a conflict on disk shows both versions)."""

    def __init__(
        self,
        memory: MemoryControl,
        draft: CardDraft,
        *,
        filename: str | None = None,
        sha256: str | None = None,
        levels: tuple[str, ...],
        resolving: CardRow | None = None,
    ) -> None:
        heading = f"Resolve {resolving.level}/{resolving.filename}" if resolving else None
        super().__init__(draft, filename=filename, sha256=sha256, levels=levels, heading=heading)
        self._memory = memory
        # The conflicted card this editor merges (its draft is the merge, not the card on disk).
        self.resolving = resolving

    def _cites_to_save(self) -> tuple[str, ...] | None:
        """The citations to give the save: the changed ones, or (merging a conflicted card) the
        merge's whenever they differ from the card's on disk."""
        if self.resolving is None:
            return self.changed_cites()
        cites = self.draft().cites
        return None if cites == cites_of(self.resolving) else cites

    def _pinned_to_save(self) -> bool | None:
        if self.resolving is None:
            return self.changed_pinned()
        pinned = self.draft().pinned
        return None if pinned == self.resolving.pinned else pinned

    @on(CardEditor.Save)
    def _save_asked(self, message: CardEditor.Save) -> None:
        message.stop()
        self.set_saving(True)
        cites, pinned = message.cites, message.pinned
        if self.resolving is not None:
            cites, pinned = self._cites_to_save(), self._pinned_to_save()
        self._save(message.draft, message.filename, message.sha256, message.original_level, cites, pinned)

    def _save(
        self,
        draft: CardDraft,
        filename: str | None,
        sha256: str | None,
        original_level: str | None,
        cites: tuple[str, ...] | None = None,
        pinned: bool | None = None,
    ) -> None:
        self._memory.run(
            self._check_and_save, draft, filename, sha256, original_level, cites, pinned, group="cards-edit"
        )

    async def _check_and_save(
        self,
        draft: CardDraft,
        filename: str | None,
        sha256: str | None,
        original_level: str | None,
        cites: tuple[str, ...] | None,
        pinned: bool | None,
    ) -> None:
        cards, post = self._memory.services.cards, self.post_message
        try:
            errors = await cards.check_card(draft)
            if MERGE_MARK in draft.body:
                errors = {**errors, "body": MERGE_LEFT}
            if errors:
                post(EditorOutcome(self, "invalid", errors=errors))
                return
            if (
                pinned is not None
                and filename is not None
                and replace(draft, pinned=self._loaded.pinned) == self._loaded
                and draft.level == original_level
                and self.resolving is None
            ):
                # Only the Pinned box changed: the pin alone, its own undoable batch (never while
                # merging: a conflicted card takes no pin, the merge itself must be saved).
                post(
                    EditorOutcome(
                        self, "saved", result=await cards.pin_as_edit(draft.level, filename, pinned, sha256)
                    )
                )
                return
            result = await cards.save_card(draft, filename, sha256, original_level, cites)
            if result.status == "applied":
                if pinned is not None:  # after the card's own batch: u undoes the pin first
                    await cards.pin_card(result.level, result.filename, pinned, None)
                post(EditorOutcome(self, "saved", result=result))
                return
            if filename is not None:
                # Changed or gone on disk since the editor read it: both versions are shown.
                disk = disk_draft(await cards.read_card(original_level or draft.level, filename))
                if disk is None or disk[1] != sha256:
                    post(EditorOutcome(self, "conflict", disk=disk))
                    return
            post(EditorOutcome(self, "invalid", general=one_line(f"not saved: {result.reason}", 300)))
        except Exception as e:
            post(EditorOutcome(self, "invalid", general=one_line(f"not saved: {type(e).__name__}: {e}", 300)))

    @on(CardEditor.StillTrue)
    def _still_true_asked(self, message: CardEditor.StillTrue) -> None:
        message.stop()
        self._memory.run(
            self._still_true, message.level, message.filename, message.sha256, group="cards-edit"
        )

    async def _still_true(self, level: str, filename: str, sha256: str | None) -> None:
        problem = await confirm_and_say(
            self._memory, level, filename, sha256, before=self._close_as(filename)
        )
        if problem is not None:
            self.post_message(EditorOutcome(self, "invalid", general=one_line(problem, 300)))

    def _close_as(self, filename: str) -> Callable[[], None]:
        def close() -> None:
            if self.is_attached:
                self.dismiss(filename)

        return close

    @on(EditorOutcome)
    def _save_done(self, message: EditorOutcome) -> None:
        if not self.is_attached:
            return
        if message.status == "invalid":
            self.show_errors(message.errors, message.general)
        elif message.status == "saved":
            result = message.result
            level = str(getattr(result.level, "value", result.level))
            what = "saved new" if self.filename is None else "resolved" if self.resolving else "saved"
            self.dismiss(result.filename)
            dropped = [f"citation {d.cite} dropped: {d.reason}" for d in result.dropped]
            if dropped:
                flash_lines(self._memory, f"{what} {level} card {result.filename}", dropped)
            else:
                self._memory.say(f"{what} {level} card {result.filename}")
            self._memory.after_change((level, result.filename))
        elif message.status == "conflict":
            self._show_conflict(message.disk)

    def _show_conflict(self, disk: tuple[CardDraft, str] | None) -> None:
        where = f"{self.original_level}/{self.filename}"

        def chosen(choice: ConflictChoice | None) -> None:
            if not self.is_attached:
                return
            if choice == "mine":
                # Save again over what is on disk now (or as a new card, when it was deleted).
                filename = self.filename if disk is not None else None
                sha = disk[1] if disk is not None else None
                self._save(
                    self.draft(),
                    filename,
                    sha,
                    self.original_level if disk else None,
                    self._cites_to_save(),
                    self._pinned_to_save(),
                )
            elif choice == "disk":
                if disk is None:
                    self.dismiss(None)
                    self._memory.flash(f"kept {where} deleted; your text was dropped")
                else:
                    self.load(disk[0], sha256=disk[1])
                    self.show_errors({}, None)
            else:
                self.set_saving(False)

        modal = ConflictModal(self.draft(), disk[0] if disk else None, where=where)
        self.app.push_screen(modal, callback=chosen)
