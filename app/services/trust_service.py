"""Trust of a cloned project store: whether to ask, what trusting it would let in, the answer.

It works before the runtime exists (the app asks right after its first frame, with no settings,
SDK or session): it opens the stores itself then, and hands them to the runtime's services
afterwards, so their modules and parse caches load once.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.agent.runtime import Runtime
    from memory.jobs.pace import Pacer
    from memory.store.fs import FS
    from memory.store.stores import MemoryStores


@dataclass(frozen=True)
class TrustCheck:
    needed: bool  # the project store waits for the person's answer
    where: str  # the project store's folder


@dataclass(frozen=True)
class TrustCardView:
    """One card of the trust question: what the model would get, or why it would not."""

    type: str
    title: str
    summary: str
    filename: str
    markup: str = ""  # what a rendered view hides in the card's text (a comment, a tag…), if anything
    fragment: str = ""  # the first such fragment, one printable line
    problem: str = ""  # why the card would be left out ("" when it would be used)


class TrustService:
    """``runtime``: a callable giving the Runtime once it exists (None before)."""

    def __init__(
        self,
        workspace: Path,
        home: Path | None,
        *,
        fs: FS | None,
        pacer: Pacer | None,
        card_reads: threading.Lock,
        runtime: object = None,
    ) -> None:
        self.workspace = workspace
        self.home = home
        self._fs = fs
        self._pacer = pacer
        self._card_reads = card_reads  # whole-store reads take turns (the panel's, this one's)
        self._runtime = runtime
        self._early: MemoryStores | None = None
        self._early_lock = threading.Lock()

    def _rt(self) -> Runtime | None:
        get = self._runtime
        return get() if callable(get) else None

    def _file_layer(self) -> FS:
        # The app loads this module before its first frame: the stores' file layer loads in a thread.
        from memory.store.fs import FS

        if self._fs is None:
            self._fs = FS(pace=self._pacer)
        return self._fs

    def stores(self) -> MemoryStores:
        """The runtime's stores, or before it exists stores opened for the question. Blocking:
        call in a thread (the first call loads the stores' modules)."""
        rt = self._rt()
        if rt is not None:
            return rt.stores
        with self._early_lock:
            if self._early is None:
                # The stores bring pydantic and YAML: in this thread, never before the first frame.
                from memory.store.stores import MemoryStores

                self._early = MemoryStores(self.workspace, self.home, fs=self._file_layer())
            return self._early

    async def check(self) -> TrustCheck:
        """Whether to ask: a trust record and a folder listing are read, no card, and none of the
        stores' own modules (no pydantic, no YAML: milliseconds)."""

        def check() -> TrustCheck:
            # In the check's thread: the app loads this module before its first frame.
            from memory.store import fs, paths, trust

            at = paths.Paths.for_workspace(self.workspace, self.home)
            return TrustCheck(
                trust.needs_asking(at, self._fs or fs.FS(pace=self._pacer)), str(at.project_store)
            )

        return await asyncio.to_thread(check)

    async def preview(self) -> list[TrustCardView]:
        """The question's cards: one per card the model would get, in file order, then one per card
        it would leave out, with why. Reads every card: seconds on a cold 10,000-card store."""

        def read() -> list[TrustCardView]:
            stores = self.stores()
            with self._card_reads:
                preview = stores.trust_preview()
            cards = [
                TrustCardView(
                    type=e.type,
                    title=e.title,
                    summary=e.summary,
                    filename=e.filename,
                    markup=preview.markup.get(e.filename, ("", ""))[0],
                    fragment=preview.markup.get(e.filename, ("", ""))[1],
                )
                for e in preview.entries
            ]
            cards += [
                TrustCardView(type="", title=name, summary="", filename=name, problem=reason or "left out")
                for name, reason in preview.left_out
            ]
            return cards

        return await asyncio.to_thread(read)

    async def trust(self) -> None:
        """Record the person's trust; with the runtime up, the next Run sees the store."""
        rt = self._rt()
        if rt is None:  # the start-up failed: the person's answer is still recorded
            await asyncio.to_thread(lambda: self.stores().trust_project())
            return
        await rt.trust_project()
