"""Start-up after the first frame: the trust question, the settings, the runtime object, the SDK,
the session.

The first frame is fast because the App module imports Textual and the widgets only. Then, in
order: the trust question is asked (app.tui.flows.trust_question: no settings, SDK or session
needed; nothing queued is sent before its answer, and the connection starts once it is known
whether to ask), the settings are loaded (the command line passes its flags), the runtime object is built
and the store watcher starts (``RuntimeBuilt``: the memory panel and the prompt history follow),
the chat's Markdown and the ``anthropic`` SDK (seconds) are imported in threads, and the session
opens (``RuntimeReady``) — or start-up fails, said once (``RuntimeFailed``). A bad ``--resume`` is
said once and the app goes on with a new session. What each message changes is the App's to
route: its own state, the chat screen's part, the panel's.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from app.tui.flows.trust_question import TrustQuestion
from app.tui.messages import ChatNote, RuntimeBuilt, RuntimeFailed, RuntimeReady, SettingsChanged
from app.tui.workers import start
from memory.text.lines import one_line

if TYPE_CHECKING:
    from textual.app import App

    from app.tui.app_state import AppState

log = logging.getLogger(__name__)


def _could_not_start(e: BaseException) -> RuntimeFailed:
    return RuntimeFailed(one_line(f"could not start: {type(e).__name__}: {e}", 300))


class Startup:
    """Connects ``app`` (its workers, its messages; it exits on bad settings) to the runtime
    through the bridge of ``state``. ``flags``: the command line's setting flags when the
    settings are still to be loaded (None: the bridge was given them). The trust question reads
    the panel's cards ``early`` once it knows whether to ask, ``drain`` sends what waited for its
    answer, ``refresh_panel`` shows what trusting changed."""

    def __init__(
        self,
        app: App[Any],
        state: AppState,
        flags: Mapping[str, object] | None,
        *,
        resume: str | None,
        continue_latest: bool,
        early: Callable[[], None],
        drain: Callable[[], None],
        refresh_panel: Callable[[], None],
    ) -> None:
        self._app = app
        self._bridge = bridge = state.bridge
        self._flags = dict(flags) if flags is not None else None
        self._resume = resume
        self._continue_latest = continue_latest
        self.error: str | None = None  # a bad setting: printed by run_app after the app ends
        self.trust = TrustQuestion(
            app,
            lambda: bridge.trust,
            post=app.post_message,
            phase=lambda: state.phase,
            connect=self.connect,
            early_panel=early,
            drain=drain,
            refresh_panel=refresh_panel,
        )

    def begin(self) -> None:
        """After the first frame: the trust question first, then the panel's cards and the
        connection."""
        self.trust.ask()

    def connect(self) -> None:
        start(self._app, self._connect, group="connect", exclusive=True)

    async def _connect(self) -> None:
        app, bridge = self._app, self._bridge
        if bridge.settings is None and not await self._load_settings():
            return
        try:
            await asyncio.to_thread(bridge.build)
        except Exception as e:
            app.post_message(_could_not_start(e))
            return
        start(app, bridge.watch_stores, group="watch", exclusive=True)
        app.post_message(RuntimeBuilt())
        try:
            # What the first frame did without: the chat's Markdown, then the SDK (seconds).
            await asyncio.to_thread(importlib.import_module, "widgets.chat.answer_block")
            await asyncio.to_thread(bridge.warm_sdk)
            note = await bridge.open(resume=self._resume, continue_latest=self._continue_latest)
        except ValueError as e:  # a bad --resume: said once, the app goes on with a new session
            app.post_message(ChatNote(one_line(e, 400), error=True))
            try:
                note = await bridge.open()
            except Exception as e2:
                app.post_message(RuntimeFailed(one_line(e2, 300)))
                return
        except Exception as e:
            app.post_message(_could_not_start(e))
            return
        app.post_message(RuntimeReady(bridge.credentials, note))
        try:
            await bridge.warm_search()
        except Exception as e:  # search is a help: the app goes on without a warm cache
            log.warning("memory search caches not built: %s", one_line(e, 300))

    async def _load_settings(self) -> bool:
        """The settings from the flags, the config file and the environment; False: they are
        wrong (the app exits with the reason)."""
        # Imported in a thread: a first import on the loop held the screen and the keys.
        await asyncio.to_thread(importlib.import_module, "app.agent.config.settings")
        # Not at the top: the settings bring pydantic, after the first frame (already loaded above).
        from app.agent.config.settings import SettingsError, load_settings

        try:
            settings = await asyncio.to_thread(load_settings, self._flags, home=self._bridge.home)
        except SettingsError as e:
            self.error = str(e)
            self._app.exit(return_code=2)
            return False
        self._bridge.settings = settings
        for warning in settings.warnings:
            self._app.post_message(ChatNote(one_line(warning, 300)))
        self._app.post_message(SettingsChanged())  # the status line shows them
        return True
