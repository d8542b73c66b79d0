"""The memory screens' side of the App (DESIGN.md §12, issue 8): the pending screen, the card
browser and the card editor, mixed into ``PseudoClaudeApp``.

The screens (widgets/pending/pending.py, widgets/cards/browser.py, widgets/cards/editor.py) only draw and
post messages. Here those messages become bridge calls in workers (file work off the event
loop), whose outcomes come back as messages (app/tui/messages.py) that the handlers below apply to
the screens. Every screen is live: a memory event or a change on disk refreshes what is open.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import SuspendNotSupported
from textual.message import Message

from app.tui.messages import CardsLoaded, DismissAsk, EditorOutcome, MemoryFlash, PendingLoaded

if TYPE_CHECKING:
    # The screens are imported when first opened: none of them is part of the first frame.
    from app.tui.bridge import Bridge
    from widgets.cards.browser import CardBrowser, CardRow
    from widgets.cards.editor import CardDraft, CardEditor
    from widgets.chat.log import ChatPane
    from widgets.pending.pending import PendingScreen

__all__ = ["MemoryScreens", "editor_argv"]

MAX_APPLIED_SHOWN = 200  # jobs applied this session kept for the pending screen


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
class ExternalEditOutcome(Message):
    """A card back from ``$EDITOR``: ``outcome`` is the memory.cards.ExternalEditResult of its
    private copy ``edit`` (memory.cards.ExternalEdit); ``argv`` runs the editor again; ``disk``
    (a conflict) is the card on disk now as (CardDraft, sha256), None when it is gone."""

    edit: Any
    outcome: Any
    argv: list[str]
    disk: Any = None


def _counts(applied: Any) -> str:
    c = u = d = 0
    for a in applied:
        action = str(getattr(a.action, "value", a.action))
        c += action == "create"
        u += action == "update"
        d += action == "delete"
    return f"+{c} ~{u} −{d}"


def _one(text: object, width: int = 300) -> str:
    from app.tui.commands import one_line

    return one_line(text, width)


class MemoryScreens:
    """Handlers of the memory screens, mixed into ``PseudoClaudeApp``.

    Handlers go by Textual's naming convention (``on_<namespace>_<message>``): ``@on`` is only
    collected from classes built by Textual's metaclass, and a plain mixin is not one."""

    bridge: Bridge
    built: bool
    chat: ChatPane
    # Also from the App: push_screen, post_message, notify, suspend, is_headless, _refresh_panel.

    def _init_memory_screens(self) -> None:
        self._browser: CardBrowser | None = None
        self._pending_screen: PendingScreen | None = None
        self._applied: dict[str, Any] = {}  # job id -> memory_views.AppliedRecord (this session)
        self._external_busy = False  # a card is out in $EDITOR (or its outcome is being decided)

    # -- opening ---------------------------------------------------------------------------------

    def open_pending(self) -> None:
        if self._pending_screen is not None:
            return
        from widgets.pending.pending import PendingScreen

        screen = PendingScreen()
        self._pending_screen = screen
        self.push_screen(screen, callback=self._pending_closed)  # type: ignore[attr-defined]
        self._refresh_pending()

    def _pending_closed(self, _: object = None) -> None:
        self._pending_screen = None

    def open_browser(self, select: tuple[str, str] | None = None) -> None:
        if self._browser is not None:
            return
        from widgets.cards.browser import CardBrowser

        screen = CardBrowser(levels=self.bridge.levels)
        self._browser = screen
        self.push_screen(screen, callback=self._browser_closed)  # type: ignore[attr-defined]
        self._refresh_cards(select)

    def _browser_closed(self, _: object = None) -> None:
        self._browser = None

    def open_editor(self, draft: CardDraft, *, filename: str | None = None, sha256: str | None = None) -> None:
        from widgets.cards.editor import CardEditor

        editor = CardEditor(draft, filename=filename, sha256=sha256, levels=self.bridge.levels)
        self.push_screen(editor)  # type: ignore[attr-defined]

    # -- keeping them live -----------------------------------------------------------------------

    def _refresh_memory_screens(self) -> None:
        if self._browser is not None:
            self._refresh_cards()
        if self._pending_screen is not None:
            self._refresh_pending()

    def _record_memory_event(self, event: Any) -> None:
        """Keep the jobs applied while the app runs (the pending screen lists them for the session)."""
        from app.tui.memory_views import applied_record
        from memory.events import JobApplied, JobDismissed

        if isinstance(event, JobApplied):
            excerpt = self.bridge.excerpts.get(event.job_id, "")
            self._applied[event.job_id] = applied_record(event, excerpt)
            while len(self._applied) > MAX_APPLIED_SHOWN:
                self._applied.pop(next(iter(self._applied)))
        elif isinstance(event, JobDismissed):
            self._applied.pop(event.job_id, None)

    @work(exclusive=True, group="cards-view", exit_on_error=False)
    async def _refresh_cards(self, select: tuple[str, str] | None = None) -> None:
        try:
            rows, note = await self.bridge.card_rows()
        except Exception as e:
            self._flash(f"could not read the cards: {e}", error=True)
            return
        self.post_message(CardsLoaded(rows, note, select))  # type: ignore[attr-defined]

    def on_cards_loaded(self, message: CardsLoaded) -> None:
        if self._browser is None:
            return
        self._browser.show(message.rows, note=message.note)
        if message.select is not None:
            self._browser.select(*message.select)

    @work(exclusive=True, group="pending-view", exit_on_error=False)
    async def _refresh_pending(self) -> None:
        try:
            state = await self.bridge.pending_state(list(self._applied.values()))
        except Exception as e:
            self._flash(f"could not read the pending jobs: {e}", error=True, where="pending")
            return
        self.post_message(PendingLoaded(state))  # type: ignore[attr-defined]

    def on_pending_loaded(self, message: PendingLoaded) -> None:
        if self._pending_screen is not None:
            self._pending_screen.show(message.state)

    def on_memory_flash(self, message: MemoryFlash) -> None:
        screen: Any = self._pending_screen if message.where == "pending" else self._browser
        if screen is not None:
            screen.flash(message.text, error=message.error)
        elif message.error:
            self.chat.add_error(message.text)
        else:
            self.chat.add_note(message.text)

    def _flash(self, text: object, *, error: bool = False, where: str = "cards") -> None:
        """An action's outcome (one line) for the screen it came from, posted from a worker."""
        self.post_message(MemoryFlash(_one(text), error, where))  # type: ignore[attr-defined]

    def _after_change(self, select: tuple[str, str] | None = None) -> None:
        """A change was written: the panel, and whatever screen is open, show it at once."""
        self._refresh_panel()  # type: ignore[attr-defined]
        if self._browser is not None:
            self._refresh_cards(select)
        if self._pending_screen is not None:
            self._refresh_pending()

    # -- the pending screen's actions --------------------------------------------------------------

    def on_pending_screen_approve(self, message: PendingScreen.Approve) -> None:
        self._approve(message.job_id, message.ops)

    @work(group="review", exit_on_error=False)
    async def _approve(self, job_id: str, ops: tuple[int, ...] | None) -> None:
        try:
            result = await self.bridge.approve(job_id, ops)
        except Exception as e:
            self._flash(f"not approved: {e}", error=True, where="pending")
            self._after_change()
            return
        problems = [*result.conflicts, *result.rejected]
        what = f"wrote {len(result.applied)} change(s) {_counts(result.applied)}"
        if problems:
            first = problems[0]
            kind = "conflict" if result.conflicts else "rejected"
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            text = f"{what}; {kind}, not written: {first.reason}{more}"
            self._flash(text, error=True, where="pending")
        else:
            self._flash(what, where="pending")
        self._after_change()

    def on_pending_screen_reject(self, message: PendingScreen.Reject) -> None:
        self._reject(message.job_id, message.ops)

    @work(group="review", exit_on_error=False)
    async def _reject(self, job_id: str, ops: tuple[int, ...] | None) -> None:
        try:
            remaining = await self.bridge.reject(job_id, ops)
        except Exception as e:
            self._flash(f"not rejected: {e}", error=True, where="pending")
            self._after_change()
            return
        n = "all held ops" if ops is None else f"{len(ops)} op(s)"
        left = f"; {len(remaining.held_ops)} still held" if remaining is not None else ""
        self._flash(f"rejected {n}: nothing written{left}", where="pending")
        self._after_change()

    def on_pending_screen_retry(self, message: PendingScreen.Retry) -> None:
        self._retry(message.job_id)

    @work(group="review", exit_on_error=False)
    async def _retry(self, job_id: str) -> None:
        try:
            await self.bridge.retry(job_id)
        except Exception as e:
            self._flash(f"not retried: {e}", error=True, where="pending")
        else:
            self._flash("queued again: the worker retries it now", where="pending")
        self._after_change()

    def on_pending_screen_dismiss(self, message: PendingScreen.Dismiss) -> None:
        self._ask_dismiss(message.job_id)

    @work(group="review", exit_on_error=False)
    async def _ask_dismiss(self, job_id: str) -> None:
        try:
            text = await self.bridge.turn_text(job_id)
        except Exception as e:
            self._flash(f"cannot dismiss: {e}", error=True, where="pending")
            return
        self.post_message(DismissAsk(job_id, text))  # type: ignore[attr-defined]

    def on_dismiss_ask(self, message: DismissAsk) -> None:
        job_id = message.job_id

        def answered(yes: bool | None) -> None:
            if yes:
                self._dismiss(job_id)

        from widgets.dialogs.modals import ConfirmModal

        modal = ConfirmModal(
            "Dismiss this memory job?",
            "Nothing from this turn will be remembered. The dismissal is kept in the memory history. "
            "The turn it came from:",
            body=message.text or "(the turn has no text)",
            yes="Dismiss",
        )
        self.push_screen(modal, callback=answered)  # type: ignore[attr-defined]

    @work(group="review", exit_on_error=False)
    async def _dismiss(self, job_id: str) -> None:
        try:
            await self.bridge.dismiss(job_id)
        except Exception as e:
            self._flash(f"not dismissed: {e}", error=True, where="pending")
        else:
            self._flash(f"dismissed job {job_id}", where="pending")
        self._after_change()

    # -- the card browser's actions -----------------------------------------------------------------

    def on_card_browser_new_card(self, message: CardBrowser.NewCard) -> None:
        from widgets.cards.editor import CardDraft

        levels = self.bridge.levels
        level = message.level if message.level in levels else levels[0]
        self.open_editor(CardDraft(level=level, type=message.type or "project_knowledge", title="", summary="", body=""))

    def on_card_browser_edit_card(self, message: CardBrowser.EditCard) -> None:
        from widgets.cards.editor import CardDraft

        row = message.row
        draft = CardDraft(level=row.level, type=row.type, title=row.title, summary=row.summary, body=row.body)
        self.open_editor(draft, filename=row.filename, sha256=row.sha256)

    def on_card_browser_delete_card(self, message: CardBrowser.DeleteCard) -> None:
        self._delete_card(message.row)

    @work(group="cards-edit", exit_on_error=False)
    async def _delete_card(self, row: CardRow) -> None:
        try:
            result = await self.bridge.delete_card(row.level, row.filename, row.sha256)
        except Exception as e:
            self._flash(f"not deleted: {e}", error=True)
            return
        if result.status == "applied":
            text = f"deleted {row.level} card {row.filename} (it is in the store's .trash/; u undoes)"
            self._flash(text)
        else:
            self._flash(f"not deleted: {result.reason}", error=True)
        self._after_change()

    def on_card_browser_move_card(self, message: CardBrowser.MoveCard) -> None:
        row = message.row
        if row.level == "user" and "project" not in self.bridge.levels:
            self._flash("this workspace has no project level to move the card to", error=True)
            return
        self._move_card(row)

    @work(group="cards-edit", exit_on_error=False)
    async def _move_card(self, row: CardRow) -> None:
        try:
            result = await self.bridge.move_card(row.level, row.filename, row.sha256)
        except Exception as e:
            self._flash(f"not moved: {e}", error=True)
            return
        if result.status == "applied":
            level = str(getattr(result.level, "value", result.level))
            self._flash(f"moved to {level}: {result.filename} (u undoes)")
            self._after_change((level, result.filename))
        else:
            self._flash(f"not moved: {result.reason}", error=True)
            self._after_change()

    def on_card_browser_undo(self, message: CardBrowser.Undo) -> None:
        self._undo_batch()

    @work(group="cards-edit", exit_on_error=False)
    async def _undo_batch(self) -> None:
        try:
            result = await self.bridge.undo()
        except Exception as e:  # nothing to undo, or a note changed since
            self._flash(e, error=True)
            return
        problems = [*result.conflicts, *result.rejected]
        if problems:
            self._flash(f"not undone: {problems[0].reason}", error=True)
        else:
            self._flash(f"undid the last memory batch ({len(result.applied)} change(s))")
        self._after_change()

    def on_card_browser_open_external(self, message: CardBrowser.OpenExternal) -> None:
        if self._external_busy:
            self._flash("a card is already open in your editor", error=True)
            return
        argv = editor_argv()
        if argv is None:
            self._flash("no editor: set $EDITOR (or $VISUAL) to open cards in your editor", error=True)
            return
        self._external_busy = True
        self._open_external(message.row, argv)

    @work(group="cards-edit", exit_on_error=False)
    async def _open_external(self, row: CardRow, argv: list[str]) -> None:
        from memory.store.store import StoreError

        try:
            edit = await self.bridge.start_external_edit(row.level, row.filename)
        except (StoreError, OSError, ValueError) as e:
            self._flash(f"not opened: {e}", error=True)
            self._external_busy = False
            return
        await self._edit_round(edit, argv)

    @work(group="cards-edit", exit_on_error=False)
    async def _edit_again(self, edit: Any, argv: list[str]) -> None:
        await self._edit_round(edit, argv)

    async def _edit_round(self, edit: Any, argv: list[str]) -> None:
        """$EDITOR on the private copy, then the copy checked and applied; the outcome is posted
        (ExternalEditOutcome). The card itself is never handed to the editor."""
        name = os.path.basename(argv[0])
        try:
            try:
                code = await self._run_editor([*argv, str(edit.path)])
            except SuspendNotSupported:
                await self.bridge.discard_external_edit(edit)
                self._flash("this terminal cannot hand over to an editor: use e to edit the card here", error=True)
                self._external_busy = False
                return
            except OSError as e:
                await self.bridge.discard_external_edit(edit)
                self._flash(f"could not run {name}: {e}", error=True)
                self._external_busy = False
                return
            refuse = None if code == 0 else f"{name} exited with {code}: nothing was applied"
            outcome = await self.bridge.finish_external_edit(edit, refuse=refuse)
            disk = None
            if outcome.status == "conflict":
                disk = await self.bridge.read_draft(str(edit.level), edit.filename)
        except Exception as e:  # the copy is kept: the person's text is not lost to an I/O error
            self._flash(f"not applied: {type(e).__name__}: {e} (your text is in {edit.path})", error=True)
            self._external_busy = False
            return
        self.post_message(ExternalEditOutcome(edit, outcome, argv, disk))  # type: ignore[attr-defined]

    def on_external_edit_outcome(self, message: ExternalEditOutcome) -> None:
        edit, outcome, argv = message.edit, message.outcome, message.argv
        where = f"{edit.level}/{edit.filename}"
        name = os.path.basename(argv[0])
        if outcome.status == "unchanged":
            self._end_external(edit, f"back from {name}: no changes")
        elif outcome.status == "applied":
            result = outcome.result
            level = str(getattr(result.level, "value", result.level))
            self._end_external(edit, f"saved {level} card {result.filename} from {name} (u undoes)")
            self._after_change((level, result.filename))
        elif outcome.status == "invalid":
            self._ask_edit_again(edit, argv, outcome.problem, outcome.text, where)
        elif outcome.status == "conflict":
            self._show_external_conflict(message)

    def _ask_edit_again(self, edit: Any, argv: list[str], problem: str, text: str, where: str) -> None:
        from widgets.cards.editor import EditProblemModal

        def chosen(choice: str | None) -> None:
            if choice == "edit":
                self._edit_again(edit, argv)
            else:
                self._end_external(edit, f"discarded your edit: {where} is unchanged")

        self.push_screen(EditProblemModal(_one(problem), text, where=where), callback=chosen)  # type: ignore[attr-defined]

    def _show_external_conflict(self, message: ExternalEditOutcome) -> None:
        from widgets.cards.editor import CardDraft, ConflictModal

        edit, outcome, argv, disk = message.edit, message.outcome, message.argv, message.disk
        f = outcome.fields
        mine = CardDraft(level=f.level, type=f.type, title=f.title, summary=f.summary, body=f.body)
        where = f"{edit.level}/{edit.filename}"

        def chosen(choice: str | None) -> None:
            if choice == "mine":
                self._keep_mine(edit, argv, mine, disk, outcome.text)
            elif choice == "disk":
                self._end_external(edit, f"kept {where} as it is on disk; your edit was dropped")
            else:
                problem = "the card changed on disk since it was copied for your editor: not applied"
                self._ask_edit_again(edit, argv, problem, outcome.text, where)

        self.push_screen(ConflictModal(mine, disk[0] if disk else None, where=where), callback=chosen)  # type: ignore[attr-defined]

    @work(group="cards-edit", exit_on_error=False)
    async def _keep_mine(
        self, edit: Any, argv: list[str], mine: CardDraft, disk: tuple[CardDraft, str] | None, text: str
    ) -> None:
        """The person's version over the disk's (or as a new card, when the card was deleted)."""
        from memory.store.cards import CardFields, ExternalEditResult

        fields = CardFields(level=mine.level, type=mine.type, title=mine.title, summary=mine.summary, body=mine.body)
        try:
            if disk is None:
                result = await self.bridge.save_card(mine, None, None, None)
            else:
                result = await self.bridge.save_card(mine, edit.filename, disk[1], str(edit.level))
            now = None
            if result.status == "conflict":
                now = await self.bridge.read_draft(str(edit.level), edit.filename)
        except Exception as e:
            self._flash(f"not applied: {type(e).__name__}: {e} (your text is in {edit.path})", error=True)
            self._external_busy = False
            return
        status = result.status if result.status != "rejected" else "invalid"
        outcome = ExternalEditResult(status=status, problem=result.reason, fields=fields, result=result, text=text)
        self.post_message(ExternalEditOutcome(edit, outcome, argv, now))  # type: ignore[attr-defined]

    def _end_external(self, edit: Any, text: str) -> None:
        """The edit is over: its private copy goes, the outcome is said."""
        self._external_busy = False
        self._discard_copy(edit)
        if self._browser is not None:
            self._browser.flash(_one(text))
        else:
            self.chat.add_note(_one(text))

    @work(group="cards-edit", exit_on_error=False)
    async def _discard_copy(self, edit: Any) -> None:
        with contextlib.suppress(OSError):
            await self.bridge.discard_external_edit(edit)

    async def _run_editor(self, argv: list[str]) -> int:
        if getattr(self, "is_headless", False):
            # Tests: nothing to hand the terminal to; the "editor" is a script.
            done = await asyncio.to_thread(subprocess.run, argv, stdin=subprocess.DEVNULL, capture_output=True)
            return done.returncode
        with self.suspend():  # type: ignore[attr-defined]
            return subprocess.run(argv).returncode

    # -- the editor ---------------------------------------------------------------------------------

    def on_card_editor_save(self, message: CardEditor.Save) -> None:
        message.editor.set_saving(True)
        self._save_card(message.editor, message.draft, message.filename, message.sha256, message.original_level)

    @work(group="cards-edit", exit_on_error=False)
    async def _save_card(
        self, editor: CardEditor, draft: CardDraft, filename: str | None, sha256: str | None, original_level: str | None
    ) -> None:
        post = self.post_message  # type: ignore[attr-defined]
        try:
            errors = await self.bridge.check_card(draft)
            if errors:
                post(EditorOutcome(editor, "invalid", errors=errors))
                return
            result = await self.bridge.save_card(draft, filename, sha256, original_level)
            if result.status == "applied":
                post(EditorOutcome(editor, "saved", result=result))
                return
            if filename is not None:
                # Changed or gone on disk since the editor read it: both versions are shown.
                disk = await self.bridge.read_draft(original_level or draft.level, filename)
                if disk is None or disk[1] != sha256:
                    post(EditorOutcome(editor, "conflict", disk=disk))
                    return
            post(EditorOutcome(editor, "invalid", general=_one(f"not saved: {result.reason}")))
        except Exception as e:
            post(EditorOutcome(editor, "invalid", general=_one(f"not saved: {type(e).__name__}: {e}")))

    def on_editor_outcome(self, message: EditorOutcome) -> None:
        editor: CardEditor = message.editor
        if not editor.is_attached:
            return
        if message.status == "invalid":
            editor.show_errors(message.errors, message.general)
        elif message.status == "saved":
            result = message.result
            level = str(getattr(result.level, "value", result.level))
            created = editor.filename is None
            what = "saved new" if created else "saved"
            editor.dismiss(result.filename)
            text = f"{what} {level} card {result.filename}"
            if self._browser is not None:
                self._browser.flash(text)
            else:
                self.chat.add_note(text)
            self._after_change((level, result.filename))
        elif message.status == "conflict":
            self._show_conflict(editor, message.disk)

    def _show_conflict(self, editor: CardEditor, disk: tuple[CardDraft, str] | None) -> None:
        from widgets.cards.editor import ConflictModal

        mine = editor.draft()
        where = f"{editor.original_level}/{editor.filename}"

        def chosen(choice: str | None) -> None:
            if not editor.is_attached:
                return
            if choice == "mine":
                # Save again over what is on disk now (or as a new card, when it was deleted).
                filename = editor.filename if disk is not None else None
                sha = disk[1] if disk is not None else None
                self._save_card(editor, editor.draft(), filename, sha, editor.original_level if disk else None)
            elif choice == "disk":
                if disk is None:
                    editor.dismiss(None)
                    self._flash(f"kept {where} deleted; your text was dropped")
                else:
                    editor.load(disk[0], sha256=disk[1])
                    editor.show_errors({}, None)
            else:
                editor.set_saving(False)

        self.push_screen(ConflictModal(mine, disk[0] if disk else None, where=where), callback=chosen)  # type: ignore[attr-defined]

    # -- /remember ----------------------------------------------------------------------------------

    def remember(self, text: str) -> None:
        """/remember TEXT: the editor, prefilled; Ctrl+S saves (nothing is written before)."""
        self.open_editor(self.bridge.remember_draft(text))
