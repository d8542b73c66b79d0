"""The cards of a workspace's two stores, as a person works with them: listed with their
citations' states and their use, read for the editor, checked, saved, deleted, moved, pinned,
confirmed "still true", edited in the person's own editor, filtered through the search index,
and the last batch undone.

Every edit is a manual, undoable batch of the stores (``memory.store.cards``); what comes back is
plain data defined here (or ``memory.model``'s), never a widget's state: the screens map it.
The blocking functions are module-level (``list_cards``, ``read_card``, ``stored_card``) so the
command line and tests call them directly; ``CardsService`` runs them off the event loop.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from memory.constants import Level
from memory.grounding.usage import use_text
from memory.model import BatchResult, DroppedCite, Note, NoteMeta
from memory.store.cards import (
    CardResult,
    ExternalEdit,
    ExternalEditResult,
    discard_external_edit,
    finish_external_edit,
    save_card,
    start_external_edit,
)
from memory.store.frontmatter import FrontMatterError, parse_meta, split_note
from memory.store.store import StoreError
from memory.text.lines import one_line
from memory.text.terminal import strip_terminal

if TYPE_CHECKING:
    from memory.grounding.staleness import CardCheck
    from memory.grounding.usage import CardUse
    from memory.search.engine import MemorySearch
    from memory.store.stores import MemoryStores

__all__ = [
    "CardChange",
    "CardEntry",
    "CardInput",
    "CardListing",
    "CardText",
    "CardsService",
    "Citation",
    "ConflictVersion",
    "ConflictVersions",
    "EditBack",
    "EditCopy",
    "FilterAnswer",
    "StoredCard",
    "list_cards",
    "read_card",
    "stored_card",
    "title_from",
]

log = logging.getLogger(__name__)

# Per level the ``level/filename`` of the cards holding every word, with its search score (best
# first); None for a level that cannot be searched (untrusted).
FilterAnswer = dict[str, dict[str, float] | None]


class CardInput(Protocol):
    """A card's editable fields as a person wrote them (the editor's draft is one)."""

    @property
    def level(self) -> str: ...

    @property
    def type(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def summary(self) -> str: ...

    @property
    def body(self) -> str: ...


@dataclass(frozen=True)
class CardText:
    """A card's editable fields: what a new card starts from, and a copy's fields read back."""

    level: str
    type: str
    title: str
    summary: str
    body: str
    cites: tuple[str, ...] = ()
    pinned: bool = False


@dataclass(frozen=True)
class ConflictVersion:
    """One version of a card git left conflicted: git's label for it, its front matter (None
    when it does not parse: then ``body`` is the whole side and ``problem`` says why)."""

    label: str
    meta: NoteMeta | None
    body: str
    problem: str = ""


@dataclass(frozen=True)
class ConflictVersions:
    ours: ConflictVersion
    theirs: ConflictVersion


@dataclass(frozen=True)
class StoredCard:
    """A card as read from its store now; ``conflict``: both versions, when git left markers."""

    note: Note
    conflict: ConflictVersions | None = None


@dataclass(frozen=True)
class Citation:
    """A card's citation with its state as checked now ("" when not checked); as read, unsanitized."""

    spec: str
    state: str = ""
    reason: str = ""


@dataclass(frozen=True)
class CardEntry:
    """A card as the browser lists it. ``stale``: why its citations make it stale (None: fresh or
    uncited); ``use``: its reads as words ("read 12× · last 3 days ago"); ``in_prompt``: in the
    index a new Run's prompt gets."""

    card: StoredCard
    untrusted: bool
    stale: str | None
    cites: tuple[Citation, ...]
    reads: int
    last_read: str
    use: str
    in_prompt: bool


@dataclass(frozen=True)
class CardListing:
    """Every card of both levels (project first, each by filename) and a note for the header (an
    untrusted project store, a level that cannot be read), already one terminal-safe line."""

    cards: tuple[CardEntry, ...]
    note: str | None


@dataclass(frozen=True)
class CardChange:
    """What a card edit did: ``applied`` (``txid`` names the batch), ``conflict`` (the card changed
    since it was read), ``rejected`` (``reason`` says why). ``level``/``filename`` name the card as
    it is now (after a move: its new place); ``dropped``: citations given that were not kept."""

    status: Literal["applied", "conflict", "rejected"]
    level: str
    filename: str
    reason: str = ""
    txid: str | None = None
    sha256: str | None = None
    dropped: tuple[DroppedCite, ...] = ()


@dataclass(frozen=True)
class EditCopy:
    """A card copied out for the person's editor: the private copy ``path`` in its own ``folder``,
    and the card's bytes and hash as they were when copied."""

    level: str
    filename: str
    folder: Path
    path: Path
    sha256: str
    original: bytes


@dataclass(frozen=True)
class EditBack:
    """What came back from the person's editor: ``unchanged``; ``invalid`` (``problem`` says why,
    ``text`` is the copy as read); ``applied`` (``result``); ``conflict`` (the card changed on disk
    since it was copied; ``fields`` is the person's version, nothing was written)."""

    status: Literal["unchanged", "invalid", "applied", "conflict"]
    problem: str = ""
    text: str = ""
    fields: CardText | None = None
    result: CardChange | None = None


def _value(x: object) -> str:
    return str(getattr(x, "value", x) if x is not None else "")


def title_from(text: str, words: int = 8, limit: int = 60) -> str:
    """A card title from the first words of ``text``."""
    title = " ".join(text.split()[:words])
    return title if len(title) <= limit else title[: limit - 1].rstrip() + "…"


def _change(result: CardResult) -> CardChange:
    return CardChange(
        status=result.status,
        level=_value(result.level),
        filename=result.filename,
        reason=result.reason,
        txid=result.txid,
        sha256=result.sha256,
        dropped=result.dropped,
    )


def _copy(edit: ExternalEdit) -> EditCopy:
    return EditCopy(
        level=_value(edit.level),
        filename=edit.filename,
        folder=edit.folder,
        path=edit.path,
        sha256=edit.sha256,
        original=edit.original,
    )


def _edit(copy: EditCopy) -> ExternalEdit:
    return ExternalEdit(
        level=Level(copy.level),
        filename=copy.filename,
        folder=copy.folder,
        path=copy.path,
        sha256=copy.sha256,
        original=copy.original,
    )


def _back(result: ExternalEditResult) -> EditBack:
    f = result.fields
    fields = (
        None
        if f is None
        else CardText(level=f.level, type=f.type, title=f.title, summary=f.summary, body=f.body)
    )
    return EditBack(
        status=result.status,
        problem=result.problem,
        text=result.text,
        fields=fields,
        result=None if result.result is None else _change(result.result),
    )


# -- reading -------------------------------------------------------------------------------


def _version(label: str, text: str, fallback: NoteMeta) -> ConflictVersion:
    """One side: its front matter and body; a side that does not parse is all body."""
    try:
        head, body = split_note(text)
        return ConflictVersion(label, parse_meta(head, fallback_type=fallback.type), body)
    except FrontMatterError as e:
        return ConflictVersion(label, None, text, one_line(e, 200))


def stored_card(note: Note) -> StoredCard:
    """``note`` with both versions parsed when git left it conflicted."""
    sides = note.conflict
    if sides is None:
        return StoredCard(note)
    return StoredCard(
        note,
        ConflictVersions(
            ours=_version(sides.ours_label, sides.ours, note.meta),
            theirs=_version(sides.theirs_label, sides.theirs, note.meta),
        ),
    )


def read_card(stores: MemoryStores, level: str, filename: str) -> StoredCard | None:
    """The card on disk now, or None when it is gone (or cannot be read). Blocking."""
    try:
        note = stores.read_note(level, filename)
    except (StoreError, OSError):
        return None
    return stored_card(note)


def _grounding(stores: MemoryStores) -> tuple[Mapping[str, CardCheck], dict[str, dict[str, CardUse]]]:
    """The project cards' citation checks and each level's use counts. Neither may keep the
    cards from being listed: a failure is logged and the cards are listed without it."""
    try:
        checks: Mapping[str, CardCheck] = stores.staleness()
    except Exception:
        log.warning("checking the cards' citations failed", exc_info=True)
        checks = {}
    uses: dict[str, dict[str, CardUse]] = {}
    for level in stores.stores:
        try:
            uses[level.value] = stores.usage_of(level)
        except Exception:
            log.warning("reading the %s cards' use failed", level.value, exc_info=True)
    return checks, uses


def _shown(stores: MemoryStores) -> frozenset[str]:
    """The ``level/filename`` of the cards a new Run's index shows; an unreadable store only
    costs the "in the prompt" mark its answer."""
    try:
        return stores.prompt_index().shown
    except Exception:
        log.warning("building the prompt's index failed", exc_info=True)
        return frozenset()


def _citations(note: Note, check: CardCheck | None) -> tuple[Citation, ...]:
    states = {c.spec: c for c in check.cites} if check is not None else {}
    out = []
    for cite in note.meta.cites:
        state = states.get(cite.spec)
        out.append(
            Citation(cite.spec, state.state, state.reason) if state is not None else Citation(cite.spec)
        )
    return tuple(out)


def _entry(
    note: Note,
    untrusted: bool,
    check: CardCheck | None,
    use: CardUse | None,
    now: _dt.datetime | None,
    in_prompt: bool,
) -> CardEntry:
    return CardEntry(
        card=stored_card(note),
        untrusted=untrusted,
        stale=check.reason if check is not None and check.stale else None,
        cites=_citations(note, check),
        reads=use.reads if use is not None else 0,
        last_read=use.last_read if use is not None else "",
        use=use_text(use, now),
        in_prompt=in_prompt,
    )


def list_cards(stores: MemoryStores, *, now: _dt.datetime | None = None) -> CardListing:
    """Every card of both levels (project first, each sorted by filename) with its citations'
    states and its use (``now``: what "3 days ago" counts from). Blocking."""
    entries: list[CardEntry] = []
    notes: list[str] = []
    checks, uses = _grounding(stores)
    shown = _shown(stores)
    trusted = bool(stores.project_trusted) if stores.has_project_level else True
    for level in (Level.PROJECT, Level.USER) if stores.has_project_level else (Level.USER,):
        try:
            found = stores.notes(level)
        except (StoreError, OSError) as e:
            notes.append(f"{level} memory could not be read: {strip_terminal(str(e), keep_newlines=False)}")
            continue
        untrusted = level is Level.PROJECT and not trusted
        if untrusted and found:
            notes.append(
                "project memory is untrusted: its cards are not used until you trust it (asked at start)"
            )
        checked = checks if level is Level.PROJECT else {}
        used = uses.get(level.value, {})
        entries.extend(
            _entry(
                n,
                untrusted,
                checked.get(n.filename),
                used.get(n.filename),
                now,
                in_prompt=f"{level.value}/{n.filename}" in shown,
            )
            for n in found
        )
    if not stores.has_project_level:
        notes.append("this workspace has no project level: its project store is the user store")
    return CardListing(tuple(entries), " · ".join(notes) or None)


# -- the service -----------------------------------------------------------------------------


class CardsService:
    """The cards feature over one workspace's stores; ``search``: its search caches (None: the
    filter has no index to ask). ``card_reads``: the lock the reads that parse every card of a
    store take turns on (the panel's, the trust window's, the staleness check): side by side on
    a 10,000-card store each took twice as long, one after the other the second finds the parse
    cache warm. Pass the one the other readers share; without it the service has its own."""

    def __init__(
        self, stores: MemoryStores, search: MemorySearch | None, *, card_reads: threading.Lock | None = None
    ) -> None:
        self.stores = stores
        self.search = search
        self.card_reads = card_reads if card_reads is not None else threading.Lock()

    @property
    def levels(self) -> tuple[str, ...]:
        """The workspace's levels: the user level alone when it has no project level."""
        return ("project", "user") if self.stores.has_project_level else ("user",)

    def remember_draft(self, text: str) -> CardText:
        """/remember TEXT: a new card's fields (body = TEXT, a title from its first words, a
        project_knowledge card of the project level — the user level when there is none)."""
        return CardText(
            level=self.levels[0], type="project_knowledge", title=title_from(text), summary="", body=text
        )

    # -- reading ----------------------------------------------------------------------------

    async def list_cards(self) -> CardListing:
        return await asyncio.to_thread(list_cards, self.stores)

    async def read_card(self, level: str, filename: str) -> StoredCard | None:
        """The card on disk now (its ``note.sha256`` is the edit's token), None when it is gone."""
        return await asyncio.to_thread(read_card, self.stores, level, filename)

    async def stale_cards(self) -> frozenset[tuple[str, str]]:
        """(filename, reason) of each stale project card now: a stat per cited file while
        nothing changed (the checker caches by stat)."""

        def check() -> frozenset[tuple[str, str]]:
            with self.card_reads:
                checks = self.stores.staleness()
            return frozenset((name, c.reason) for name, c in checks.items() if c.stale)

        return await asyncio.to_thread(check)

    # -- edits: each a manual, undoable batch -----------------------------------------------

    async def check_card(self, card: CardInput) -> dict[str, str]:
        """What is wrong with the card, by field (empty: nothing). Writes nothing."""
        return await asyncio.to_thread(
            self.stores.check_card, card.level, card.type, card.title, card.summary, card.body
        )

    async def save_card(
        self,
        card: CardInput,
        filename: str | None,
        sha256: str | None,
        original_level: str | None,
        cites: tuple[str, ...] | None = None,
    ) -> CardChange:
        """The editor's save: a new card (no ``filename``), or an edit of the card as read
        (``sha256``), moved when its level changed; ``cites``: the citations the person changed
        (None: left alone)."""
        return await asyncio.to_thread(
            lambda: _change(
                save_card(
                    self.stores,
                    card.level,
                    card.type,
                    card.title,
                    card.summary,
                    card.body,
                    filename=filename,
                    expected_sha=sha256,
                    original_level=original_level,
                    cites=cites,
                )
            )
        )

    async def delete_card(self, level: str, filename: str, sha256: str) -> CardChange:
        return await asyncio.to_thread(lambda: _change(self.stores.delete_card(level, filename, sha256)))

    async def move_card(self, level: str, filename: str, sha256: str) -> CardChange:
        """The card to the other level."""
        to = "user" if level == "project" else "project"
        return await asyncio.to_thread(lambda: _change(self.stores.move_card(level, filename, to, sha256)))

    async def pin_card(self, level: str, filename: str, pinned: bool, sha256: str | None) -> BatchResult:
        """Pin or unpin a card: its own batch (empty when it already was)."""
        return await asyncio.to_thread(self.stores.pin, level, filename, pinned, sha256)

    async def pin_as_edit(self, level: str, filename: str, pinned: bool, sha256: str | None) -> CardChange:
        """The editor's save when only its Pinned box changed: the pin, as the editor's outcome."""
        result = await self.pin_card(level, filename, pinned, sha256)
        reasons = [c.reason for c in result.conflicts] + [r.reason for r in result.rejected]
        if reasons:
            return CardChange(
                status="conflict" if result.conflicts else "rejected",
                level=level,
                filename=filename,
                reason=reasons[0],
            )
        return CardChange(status="applied", level=level, filename=filename, txid=result.txid)

    async def confirm_card(
        self, level: str, filename: str, sha256: str | None
    ) -> tuple[BatchResult, list[str]]:
        """A person's "still true": the batch and the lines saying what it changed. StoreError
        (one line) when it cannot be."""
        return await asyncio.to_thread(self.stores.confirm, level, filename, sha256)

    async def undo(self, expect: str | None = None) -> BatchResult:
        """The workspace's last batch reverted; refused (an error) when a card changed since, or
        when ``expect`` is given and another batch than that one is the last."""
        return await asyncio.to_thread(self.stores.undo, expect)

    # -- the person's own editor ------------------------------------------------------------

    async def start_external_edit(self, level: str, filename: str) -> EditCopy:
        """The card copied to a private file for the editor; an error (one line) when it cannot be."""
        return await asyncio.to_thread(lambda: _copy(start_external_edit(self.stores, level, filename)))

    async def finish_external_edit(self, copy: EditCopy, *, refuse: str | None = None) -> EditBack:
        """The copy read back, checked and applied as one edit; ``refuse``: a reason not to apply a
        changed copy (the editor failed). The copy stays until ``discard_external_edit``."""
        return await asyncio.to_thread(
            lambda: _back(finish_external_edit(self.stores, _edit(copy), refuse=refuse))
        )

    async def discard_external_edit(self, copy: EditCopy) -> None:
        await asyncio.to_thread(discard_external_edit, _edit(copy))

    # -- the search index -------------------------------------------------------------------

    async def filter_keys(self, text: str) -> FilterAnswer:
        """The browser's filter through the search index (``FilterAnswer``)."""
        search = self.search
        if search is None:
            raise RuntimeError("no search index")

        def look() -> FilterAnswer:
            return {level: search.filter_keys(text, level) for level in self.levels}

        return await asyncio.to_thread(look)

    async def search_changed(self) -> list[str]:
        """A store changed outside the app: the search caches sync again before their next use.
        The one-line notices of caches rebuilt meanwhile (damaged, foreign) are returned."""
        if self.search is None:
            return []
        self.search.mark_changed()
        return await asyncio.to_thread(self.search.notices)
