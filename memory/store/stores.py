"""Both stores of a workspace: the reads, and the one door to every write.

Reads: the snapshot a job's model sees, the merged index, a note, ``read_memory``. Writes go
through memory/store/transaction.py (apply, rebuild), memory/store/journal.py (recover) and
memory/store/history.py (undo), always under the stores' lock; a person's card edits go through
memory/store/cards.py, which uses ``apply`` like everything else. The indexes are built from the
card files by memory/store/index_builder.py. All of it is synchronous and thread-safe: callers on
an event loop use ``asyncio.to_thread``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import filelock
from pydantic import BaseModel

from memory.constants import INDEX_FILE, Level, NoteType
from memory.grounding.staleness import CardCheck
from memory.grounding.usage import CardUse, UsageLog
from memory.model import BatchResult, HistoryEntry, HistoryKind, MemoryText, Note, Rejection, utcnow
from memory.store import cards, history, journal, transaction, trust
from memory.store.fs import DEFAULT_FS, FS
from memory.store.index import MergedIndex, TrustPreview
from memory.store.index_builder import IndexBuilder, PromptIndex
from memory.store.layout import StoreLayout
from memory.store.locks import file_lock
from memory.store.paths import Paths
from memory.store.plan import key
from memory.store.stamp import folder_stamp, read_stamp, stamp_path, write_stamp
from memory.store.store import Store, StoreError
from memory.store.transaction import TransactionError
from memory.text.names import quote

__all__ = [
    "CITES_HEAD",
    "STALE_LINE",
    "MemoryStores",
    "Snapshot",
    "cites_header",
    "untrusted_cards",
]

LOCK_TIMEOUT = 60.0


class Snapshot(BaseModel):
    """The index a job's model sees, with each note's hash for compare-and-swap."""

    project_md: str
    user_md: str
    hashes: dict[str, str]  # "<level>/<filename>" -> sha256
    # Stale project cards (filename -> one-line reason) the memory model may update or delete.
    stale: dict[str, str] = {}


class MemoryStores:
    """Both stores of a workspace, and every write to them."""

    def __init__(
        self,
        workspace: Path | str,
        home: Path | None = None,
        *,
        fs: FS = DEFAULT_FS,
        clock: Callable[[], _dt.datetime] = utcnow,
    ) -> None:
        # The transaction, the history and trust get this layout, never the facade.
        self.layout = StoreLayout.for_workspace(workspace, home, fs=fs, clock=clock)
        # The project store's cards are cached on disk only while it is trusted: an untrusted
        # store is shown exactly as its files parse, and none of it is copied into the home.
        cache = self.project.card_cache
        if cache is not None:
            cache.gate = self._project_cache_open
        # Reads of cards by the model, per user (never in a card file: a read must not change a
        # shared card).
        self.usage = UsageLog(self.layout.paths.home)
        self.indexes = IndexBuilder(self.layout, self.usage)

    @property
    def paths(self) -> Paths:
        return self.layout.paths

    @property
    def fs(self) -> FS:
        return self.layout.fs

    @property
    def clock(self) -> Callable[[], _dt.datetime]:
        return self.layout.clock

    @property
    def project(self) -> Store:
        return self.layout.project

    @property
    def user(self) -> Store:
        return self.layout.user

    @property
    def has_project_level(self) -> bool:
        """False for a workspace at ~ with the default home: its project store is the user store."""
        return self.layout.has_project_level

    def store(self, level: Level | str) -> Store:
        return self.layout.store(level)

    @property
    def stores(self) -> dict[Level, Store]:
        """The levels this workspace has (the user level only when the two are one folder)."""
        return self.layout.stores

    # -- locking -------------------------------------------------------------------------------

    @contextmanager
    def locked(self, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
        self.fs.makedirs(self.paths.locks_dir, 0o700)
        lock = file_lock(self.paths.store_lock, timeout)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise TransactionError(
                f"memory stores are locked by another process ({self.paths.store_lock})"
            ) from None
        try:
            yield
        finally:
            lock.release()

    # -- reading -------------------------------------------------------------------------------

    def _recover_first(self) -> None:
        """Finish an interrupted transaction before a read that feeds a prompt. The check is a
        listing; the lock is taken only when a committed record is waiting."""
        if journal.needs_recovery(self.layout):
            self.recover()

    # -- trust (memory/store/trust.py) ---------------------------------------------------------

    @property
    def project_trusted(self) -> bool:
        """Whether the project store may enter prompts and extraction. Read from disk each time:
        a ``git pull`` can bring a store in, and another window can record trust."""
        return trust.project_trusted(self.layout)

    def _project_cache_open(self) -> bool:
        return self.has_project_level and self.project_trusted

    def pin_listings(self) -> None:
        """One look at each store for a short command: after its first pass over a folder, the
        command reads that pass again while this process changes nothing, instead of listing and
        stat'ing every card once more (its derived-index check and its answer are one moment)."""
        for st in self.stores.values():
            st.pinned = True

    def trust_project(self) -> None:
        """Record the person's trust in this workspace's project store (once per workspace)."""
        if self.has_project_level:
            trust.record_trust(self.paths, self.fs, how="trusted by the person")

    def record_read(self, level: Level | str, filename: str) -> None:
        """Count one read of a card by the model (``read_memory``); never fails the read."""
        self.usage.record_read(self.store(level).dir, filename, self.clock())

    def usage_of(self, level: Level | str) -> dict[str, CardUse]:
        """filename -> how often and when the model last read it, for the cards ever read."""
        return self.usage.counts(self.store(level).dir)

    def staleness(self, *, recover: bool = True) -> dict[str, CardCheck]:
        """Each project card with citations (by filename) and their state in the workspace now,
        untrusted store included (a person's view). User cards carry no citations.
        ``recover=False``: as the files are (a diagnosis changes nothing)."""
        if not self.has_project_level:
            return {}
        if recover:
            self._recover_first()
        return self.indexes.checks(Level.PROJECT, self.project.index_cards())

    def grounding_of(self, level: Level | str, filename: str) -> CardCheck | None:
        """One card's citations checked now (None: it has none, or cannot be read)."""
        try:
            note = self.read_note(level, filename)
        except StoreError:
            return None
        if not note.meta.cites or note.unparsed:
            return None
        return self.layout.grounding.check(note.level, filename, note.meta)

    def index_lines(self, level: Level | str, *, include_untrusted: bool = False) -> list[str]:
        """A level's index lines as a prompt gets them (file order); an untrusted project store
        has none unless ``include_untrusted`` (a person's view: the panel, the trust window)."""
        self._recover_first()
        return self.indexes.lines(Level(level), self.indexes.levels_for_model(include_untrusted))

    def trust_preview(self) -> TrustPreview:
        """What trusting the project store would give the model: each card's index line, and
        the cards a prompt would leave out with why (for the trust window)."""
        if not self.has_project_level:
            return TrustPreview(lines=[], left_out=[])
        self._recover_first()
        return self.indexes.trust_preview()

    def snapshot(self) -> Snapshot:
        """What an extraction request sees; an untrusted project store is left out whole."""
        with self.locked():
            journal.recover_locked(self.layout)
            levels = self.indexes.levels_for_model()
            hashes: dict[str, str] = {}
            for lv, st in levels.items():
                for name, digest in st.hashes().items():
                    hashes[key(lv, name)] = digest
            # Checked here, under the lock and after recovery: staleness() would recover again.
            project = self.project.index_cards() if Level.PROJECT in levels else []
            checks = self.indexes.checks(Level.PROJECT, project) if project else {}
            return Snapshot(
                project_md=self.indexes.index_md(Level.PROJECT, levels),
                user_md=self.indexes.index_md(Level.USER, levels),
                hashes=hashes,
                stale={name: c.reason for name, c in checks.items() if c.stale},
            )

    def merged_index(
        self, *, include_untrusted: bool = False, marks: bool = True, keep: Collection[str] = ()
    ) -> str:
        """The merged index of both levels (recovering first), as the system prompt embeds it:
        a stale project card's line ends with its stale mark unless ``marks`` is False. When
        the cards do not all fit, the lines kept are chosen by rank (memory/store/ranking.py);
        ``keep``: the ``level/filename`` of cards the session's index already shows.

        An untrusted project store is left out unless ``include_untrusted`` (a person's view:
        the panel, ``memory list``), never for a prompt.
        """
        return self.merged_entries(include_untrusted=include_untrusted, marks=marks, keep=keep).text

    def merged_entries(
        self, *, include_untrusted: bool = False, marks: bool = True, keep: Collection[str] = ()
    ) -> MergedIndex:
        """``merged_index`` as data: one entry per card with an index line (its type, title,
        summary, stale reason, author, pin, and whether the budget kept its line), and the cards
        no prompt gets; its ``text`` is the merged index, rendered from the entries."""
        self._recover_first()
        return self.indexes.merged_entries(include_untrusted=include_untrusted, marks=marks, keep=keep)

    def prompt_index(
        self, *, include_untrusted: bool = False, marks: bool = True, keep: Collection[str] = ()
    ) -> PromptIndex:
        """``merged_index`` with which cards it shows and which it leaves out (the panel's
        "N cards not in the prompt", the browser's filter, recall's candidates)."""
        self._recover_first()
        return self.indexes.prompt_index(include_untrusted=include_untrusted, marks=marks, keep=keep)

    def read_note(self, level: Level | str, filename: str) -> Note:
        self._recover_first()
        return self.store(level).read_note(filename)

    def read_memory(self, level: Level | str, filename: str, *, include_untrusted: bool = False) -> str:
        """What the ``read_memory`` tool returns: a body, or the level's whole index for MEMORY.md.

        An untrusted project store is refused (the tool's result enters the conversation)
        unless ``include_untrusted`` (a person's ``memory show``).
        """
        return self.read_memory_text(level, filename, include_untrusted=include_untrusted).text

    def read_memory_text(
        self, level: Level | str, filename: str, *, include_untrusted: bool = False
    ) -> MemoryText:
        """``read_memory``'s text, and whether the card it read is stale (its header says so)."""
        self._recover_first()
        st = self.store(level)
        if st.level is Level.PROJECT and not include_untrusted and not self.project_trusted:
            raise StoreError(trust.UNTRUSTED_REASON)
        if filename == INDEX_FILE:
            problem = st.folder_problem()
            if problem is not None:
                raise StoreError(problem)
            return MemoryText(self.indexes.index_md(st.level, marks=True))
        note = st.read_note(filename)
        if note.conflict is not None:
            # Neither side, and never the markers: a person resolves it first.
            raise StoreError(f"{quote(filename)} is {note.broken}")
        check = self.layout.grounding.check(note.level, filename, note.meta) if note.meta.cites else None
        return MemoryText(cites_header(check) + note.body, stale=_says_stale(check))

    def notes(self, level: Level | str) -> list[Note]:
        """Every note of a level (sorted by filename); [] for a level the workspace lacks."""
        self._recover_first()
        return self.store(level).notes() if Level(level) in self.stores else []

    # -- writing -------------------------------------------------------------------------------

    def recover(self) -> list[str]:
        """Finish committed transactions and drop uncommitted staging. Idempotent."""
        with self.locked():
            return journal.recover_locked(self.layout)

    def apply(
        self,
        ops: Sequence[Any],
        *,
        source: str,
        expected: Mapping[str, str] | None = None,
        jobs: Sequence[Path] = (),
        rejected: Sequence[Rejection] = (),
        label: str = "",
        all_or_nothing: bool = False,
        moved: Mapping[int, transaction.Moved] | None = None,
        kind: HistoryKind | None = None,
        took_over: Sequence[str] = (),
        sources: Mapping[int, str] | None = None,
    ) -> BatchResult:
        """Apply a batch to both stores in one transaction; every op is validated here again.

        ``ops`` are ``(index, Operation)`` pairs (or objects with ``.index``/``.op``).
        ``expected`` maps ``"<level>/<filename>"`` to the hash the proposer saw: an update or
        delete of a note whose hash differs (or that it never saw) is a recorded conflict.
        ``jobs`` are spool files this commit completes and removes. ``all_or_nothing``: any
        rejection or conflict and nothing is written. ``moved``: the creates (by op index) that
        move a card the batch deletes, with what they keep of it (``transaction.Moved``).
        ``kind``/``took_over``: the history entry's (by default ``manual`` for a person's edit).
        ``sources``: a create's own ``source`` by op index, where it is not ``source`` (an import).
        """
        with self.locked():
            journal.recover_locked(self.layout)
            return transaction.apply_locked(
                self.layout,
                ops,
                source=source,
                expected=expected,
                jobs=jobs,
                rejected=rejected,
                label=label,
                all_or_nothing=all_or_nothing,
                moved=moved,
                kind=kind,
                took_over=took_over,
                sources=sources,
            )

    def confirm(
        self, level: Level | str, filename: str, expected_sha: str | None = None
    ) -> tuple[BatchResult, list[str]]:
        """A person's "still true" for a card (``transaction.confirm_locked``)."""
        with self.locked():
            journal.recover_locked(self.layout)
            return transaction.confirm_locked(self.layout, Level(level), filename, expected_sha)

    def pin(
        self, level: Level | str, filename: str, pinned: bool = True, expected_sha: str | None = None
    ) -> BatchResult:
        """Pin or unpin a card (``transaction.pin_locked``): an empty result when it already was."""
        with self.locked():
            journal.recover_locked(self.layout)
            return transaction.pin_locked(self.layout, Level(level), filename, pinned, expected_sha)

    def rebuild_indexes(self, levels: Collection[Level] | None = None) -> list[Level]:
        """Rewrite each ``MEMORY.md`` (and the project ``.gitignore``) that differs from its notes
        (of ``levels`` only, when given)."""
        with self.locked():
            journal.recover_locked(self.layout)
            return transaction.rebuild_indexes_locked(self.layout, levels=levels)

    def refresh_indexes(self, timeout: float = LOCK_TIMEOUT) -> list[Level]:
        """The derived-index rule: each ``MEMORY.md`` that no longer matches its
        cards (``git pull``/``merge``/``checkout``, an editor) is rebuilt from them, with no
        history entry; so are the git files a store in git lacks. Run by the app at start and
        after each outside change, and by every ``memory`` command before it reads. An untrusted
        project store is left as it came. A folder whose stat stamp is what the last check saw
        is not parsed again (memory/store/stamp.py)."""
        levels = [lv for lv in self.stores if lv is Level.USER or self.project_trusted]
        stamps = {
            lv: (stamp_path(self.paths.home, self.store(lv).dir), folder_stamp(self.fs, self.store(lv).dir))
            for lv in levels
        }
        due = [lv for lv, (path, now) in stamps.items() if now is None or read_stamp(self.fs, path) != now]
        if not due:
            return []
        with self.locked(timeout):
            if journal.needs_recovery(self.layout):
                # An interrupted batch is finished by the first read (its roll-forward writes
                # MEMORY.md too), and ``doctor`` must still see it: nothing to do here.
                return []
            rebuilt = transaction.rebuild_indexes_locked(self.layout, None, due)
        for lv in due:
            # Only a state found in step is stamped: after a rebuild the next call checks once
            # more (a change racing the check is then seen, never stamped as checked).
            path, now = stamps[lv]
            if lv not in rebuilt and now is not None:
                write_stamp(self.fs, path, now)
        return rebuilt

    def repair_trash(self) -> list[str]:
        """Replace a ``.trash`` symlink with a real folder (doctor --fix)."""
        with self.locked():
            return transaction.repair_trash_locked(self.layout)

    # -- history and undo ---------------------------------------------------------------------

    def history(self) -> list[HistoryEntry]:
        """This workspace's batches, oldest first (unreadable entries are skipped)."""
        return history.read_history(self.layout)

    def undo(self, expect: str | None = None) -> BatchResult:
        """Revert the last applied batch of this workspace, refusing if a note changed since
        (``expect``: that batch's txid; refused when another batch came after it)."""
        with self.locked():
            journal.recover_locked(self.layout)
            return history.undo_locked(self.layout, expect)

    # -- a person's card edits (memory/store/cards.py) -------------------------------------------------

    def create_card(
        self, level: Level | str, type: NoteType | str, title: str, summary: str, body: str
    ) -> cards.CardResult:
        return cards.create_card(self, level, type, title, summary, body)

    def edit_card(
        self,
        level: Level | str,
        filename: str,
        title: str,
        summary: str,
        type: NoteType | str,
        body: str,
        expected_sha: str,
    ) -> cards.CardResult:
        return cards.edit_card(self, level, filename, title, summary, type, body, expected_sha)

    def delete_card(self, level: Level | str, filename: str, expected_sha: str) -> cards.CardResult:
        return cards.delete_card(self, level, filename, expected_sha)

    def move_card(
        self, level: Level | str, filename: str, to_level: Level | str, expected_sha: str
    ) -> cards.CardResult:
        return cards.move_card(self, level, filename, to_level, expected_sha)

    def check_card(self, level: str, type: str, title: str, summary: str, body: str) -> dict[str, str]:
        return cards.check_card(self, level, type, title, summary, body)

    def save_card(
        self,
        level: Level | str,
        type: NoteType | str,
        title: str,
        summary: str,
        body: str,
        *,
        filename: str | None = None,
        expected_sha: str | None = None,
        original_level: Level | str | None = None,
    ) -> cards.CardResult:
        return cards.save_card(
            self,
            level,
            type,
            title,
            summary,
            body,
            filename=filename,
            expected_sha=expected_sha,
            original_level=original_level,
        )


# The first line of what ``read_memory`` prints above a cited card's body, and the line that
# says the card is stale (the read tool's receipt looks for both).
CITES_HEAD = "Cites (checked now):"
STALE_LINE = "This card is STALE: check it against the code before relying on it."


def _says_stale(check: CardCheck | None) -> bool:
    """Whether ``cites_header(check)`` says the card is stale."""
    return check is not None and bool(check.cites) and check.stale


def cites_header(check: CardCheck | None) -> str:
    """What ``read_memory`` prints above a cited card's body: each citation and its state."""
    if check is None or not check.cites:
        return ""
    head = STALE_LINE if _says_stale(check) else ""
    lines = [
        f"- {c.spec}: {c.reason if c.state != 'fresh' else 'unchanged since the card was written'}"
        for c in check.cites
    ]
    return "\n".join(filter(None, [CITES_HEAD, *lines, head])) + "\n\n"


def untrusted_cards(stores: MemoryStores) -> list[Note]:
    """The project cards waiting for the person's trust (for the app's modal); [] when trusted."""
    if stores.project_trusted:
        return []
    return stores.notes(Level.PROJECT)
