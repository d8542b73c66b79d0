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
from functools import partial
from typing import TYPE_CHECKING

from app.tui.messages import ChatNote, TrustCardsRead, TrustChecked
from app.tui.workers import start
from memory.text.lines import one_line
from widgets.dialogs.trust import TrustCard, TrustModal

# How long the stores' modules wait for the trust window to be drawn (it takes milliseconds).
WINDOW_WAIT_S = 1.0

if TYPE_CHECKING:
    from app.tui.app import PseudoClaudeApp
    from memory.store.index import TrustPreview


def trust_cards(preview: TrustPreview) -> list[TrustCard]:
    """The trust window's cards: one per index line the model would get, then one per card it
    would leave out (with why). Blocking: call in a thread."""
    from memory.store.index import INDEX_LINE_RE

    cards = []
    markup = preview.markup
    for line in preview.lines:
        m = INDEX_LINE_RE.match(line)
        if m is None:
            continue
        text = m.group("text")
        # " — " inside a title or a summary: the line's text is shown whole, as the model reads it.
        title, summary = text.split(" — ") if text.count(" — ") == 1 else (text, "")
        filename = m.group("filename")
        what, fragment = markup.get(filename, ("", ""))
        cards.append(TrustCard(type=m.group("type"), title=one_line(title, 120), summary=one_line(summary, 120),
                               filename=one_line(filename, 120), markup=one_line(what, 60),
                               fragment=one_line(fragment, 160)))
    for filename, reason in preview.left_out:
        name = one_line(filename, 120)
        cards.append(TrustCard(type="", title=name, summary="", filename=name,
                               problem=one_line(reason, 300) or "left out"))
    return cards


class TrustQuestion:
    """Asks, shows the window, records the answer. The App routes the two messages here."""

    def __init__(self, app: PseudoClaudeApp) -> None:
        self.app = app
        self._modal: TrustModal | None = None  # the question, until answered
        self._window_drawn = asyncio.Event()  # the question is on the screen, or not asked

    def ask(self) -> None:
        self.app._awaiting_trust = True
        start(self.app, self._ask, group="trust-ask", exclusive=True)

    async def _ask(self) -> None:
        """Whether to ask, then the cards to list, each told to the App as soon as it is known;
        the connection is started in between."""
        app = self.app
        try:
            needed, where = await app.bridge.trust_needed()
        except Exception:
            # Nothing to ask on; the stores still leave an untrusted store out of every prompt.
            app.post_message(TrustChecked(False))
            app.startup.connect()
            raise
        # The window first: the check loaded none of the stores' modules (pydantic, YAML: a tenth
        # of a second and more), and the window needs none of them: they wait for it to be drawn.
        self._window_drawn = asyncio.Event()
        app.post_message(TrustChecked(needed, where=where))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._window_drawn.wait(), WINDOW_WAIT_S)
        # Then those modules, in one thread before the two below, not beside them: they are the
        # runtime's too, and two threads importing at once under one interpreter lock each take
        # twice as long. The panel's cards first, from the same stores (trust read from disk as always).
        with contextlib.suppress(Exception):  # said by what uses them: the list below, the start-up
            await asyncio.to_thread(app.bridge.trust_stores)
        app.startup.early_panel()
        app.startup.connect()
        if not needed:
            return
        try:
            preview = await app.bridge.trust_preview()
            cards = await asyncio.to_thread(trust_cards, preview)
        except Exception as e:
            app.post_message(TrustCardsRead([], error=one_line(f"{type(e).__name__}: {e}", 300)))
            raise
        app.post_message(TrustCardsRead(cards))

    def checked(self, message: TrustChecked) -> None:
        app = self.app
        if not message.needed or app._quitting:
            self._window_drawn.set()
            app._awaiting_trust = False
            app.queue.drain_soon()
            return
        # Up at once, "reading the cards…"; ``y`` waits for the list (TrustCardsRead).
        self._modal = TrustModal(None, where=message.where)
        app.push_screen(self._modal, callback=self._answered)
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
        start(self.app, partial(self._settle, bool(trusted)), group="trust", exclusive=True)

    async def _settle(self, trusted: bool) -> None:
        app = self.app
        if trusted:
            # Start-up builds the session's first system prompt from the stores: the trust goes
            # in once that is done (the runtime then rebuilds the prompt), never halfway through.
            starting = {t for w in app.workers if w.group == "connect" and (t := getattr(w, "_task", None))}
            if starting:
                await asyncio.wait(starting)
            await app.bridge.trust_project()
            app.post_message(ChatNote("project memory trusted: its cards are used from now on"))
        else:
            app.post_message(ChatNote("project memory not trusted for now: it is left out (asked again next start)"))
        app._refresh_panel()
