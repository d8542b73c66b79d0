"""The trust question: whether the project's memory store may reach the model's prompts.

Asked right after the first frame (the stores need no settings, no SDK, no session): whether to
ask is a listing (milliseconds, before even the stores' modules are loaded); the window is up at
once, "reading the cards…", and the cards it lists (every card read: seconds on a cold
10,000-card store) follow. The connection starts once
it is known whether to ask. Nothing queued is sent until the question is answered; an untrusted
store stays out of every prompt whatever happens here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from app.tui.messages import ChatNote, TrustCardsRead, TrustChecked
from app.tui.phase import Phase
from app.tui.workers import start
from memory.text.lines import one_line
from widgets.dialogs.trust_modal import TrustCard, TrustModal

# How long the stores' modules wait for the trust window to be drawn (it takes milliseconds).
WINDOW_WAIT_S = 1.0

if TYPE_CHECKING:
    from textual.app import App
    from textual.message import Message

    from app.services.trust_service import TrustCardView, TrustService


def trust_cards(views: Iterable[TrustCardView]) -> list[TrustCard]:
    """The trust window's cards, each field one line and bounded (the service gives them whole).
    Blocking on a big store: call in a thread."""
    return [
        TrustCard(
            type=v.type,
            title=one_line(v.title, 120),
            summary=one_line(v.summary, 120),
            filename=one_line(v.filename, 120),
            markup=one_line(v.markup, 60),
            fragment=one_line(v.fragment, 160),
            problem=one_line(v.problem, 300),
        )
        for v in views
    ]


class TrustQuestion:
    """Asks, shows the window, records the answer. The App routes the two messages here.
    ``app`` runs the workers and the window; ``service`` gives the trust service (the bridge's);
    ``post`` takes the two messages and what the chat says; ``phase``: the App's (no window while
    it quits); ``connect`` starts the runtime, ``early_panel`` reads the panel's cards before it,
    ``drain`` sends what waited for the answer, ``refresh_panel`` shows the answer's effect."""

    def __init__(
        self,
        app: App[Any],
        service: Callable[[], TrustService],
        *,
        post: Callable[[Message], object],
        phase: Callable[[], Phase],
        connect: Callable[[], None],
        early_panel: Callable[[], None],
        drain: Callable[[], None],
        refresh_panel: Callable[[], None],
    ) -> None:
        self._app = app
        self._post = post
        self._phase = phase
        self._refresh_panel = refresh_panel
        self._service = service
        self._connect = connect
        self._early_panel = early_panel
        self._drain = drain
        self.pending = False  # the question is open: nothing is sent before its answer
        self._modal: TrustModal | None = None  # the question, until answered
        self._window_drawn = asyncio.Event()  # the question is on the screen, or not asked

    def ask(self) -> None:
        self.pending = True
        start(self._app, self._ask, group="trust-ask", exclusive=True)

    async def _ask(self) -> None:
        """Whether to ask, then the cards to list, each told to the App as soon as it is known;
        the connection is started in between."""
        try:
            check = await self._service().check()
        except Exception:
            # Nothing to ask on; the stores still leave an untrusted store out of every prompt.
            self._post(TrustChecked(False))
            self._connect()
            raise
        # The window first: the check loaded none of the stores' modules (pydantic, YAML: a tenth
        # of a second and more), and the window needs none of them: they wait for it to be drawn.
        self._window_drawn = asyncio.Event()
        self._post(TrustChecked(check.needed, where=check.where))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._window_drawn.wait(), WINDOW_WAIT_S)
        # Then those modules, in one thread before the two below, not beside them: they are the
        # runtime's too, and two threads importing at once under one interpreter lock each take
        # twice as long. The panel's cards first, from the same stores (trust read from disk as always).
        with contextlib.suppress(Exception):  # said by what uses them: the list below, the start-up
            await asyncio.to_thread(self._service().stores)
        self._early_panel()
        self._connect()
        if not check.needed:
            return
        try:
            views = await self._service().preview()
            cards = await asyncio.to_thread(trust_cards, views)  # 10,000 cards: not on the loop
        except Exception as e:
            self._post(TrustCardsRead([], error=one_line(f"{type(e).__name__}: {e}", 300)))
            raise
        self._post(TrustCardsRead(cards))

    def checked(self, message: TrustChecked) -> None:
        if not message.needed or self._phase() is Phase.QUITTING:
            self._window_drawn.set()
            self.pending = False
            self._drain()
            return
        # Up at once, "reading the cards…"; ``y`` waits for the list (TrustCardsRead).
        self._modal = TrustModal(None, where=message.where)
        self._app.push_screen(self._modal, callback=self._answered)
        self._modal.call_after_refresh(self._window_drawn.set)  # once it is on the screen

    def cards_read(self, message: TrustCardsRead) -> None:
        modal = self._modal
        if modal is None:
            return  # answered ("not now") before the cards were read
        if message.error is not None:
            modal.show_error(f"the cards could not be read: {message.error}")
        else:
            modal.show_cards(message.cards)

    def _answered(self, trusted: bool | None) -> None:
        self._modal = None
        start(self._app, partial(self._settle, bool(trusted)), group="trust", exclusive=True)

    async def _settle(self, trusted: bool) -> None:
        if trusted:
            # Start-up builds the session's first system prompt from the stores: the trust goes
            # in once that is done (the runtime then rebuilds the prompt), never halfway through.
            connecting = [w for w in self._app.workers if w.group == "connect"]
            starting = {t for w in connecting if (t := getattr(w, "_task", None))}
            if starting:
                await asyncio.wait(starting)
            await self._service().trust()
            self._post(ChatNote("project memory trusted: its cards are used from now on"))
        else:
            self._post(
                ChatNote("project memory not trusted for now: it is left out (asked again next start)")
            )
        self._refresh_panel()
