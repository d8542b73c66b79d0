"""Start-up after the first frame: the settings, the runtime object, the SDK, the session.

The first frame is fast because the App module imports Textual and the widgets only. Then, in
order: the settings are loaded (the command line passes its flags), the runtime object is built
(``RuntimeBuilt``: the memory panel, the prompt history and the store watcher start), the chat's
Markdown and the ``anthropic`` SDK (seconds) are imported in threads, and the session opens
(``RuntimeReady``) — or start-up fails, said once (``RuntimeFailed``). A bad ``--resume`` is said
once and the app goes on with a new session.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import threading
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from textual.content import Content

from app.tui.host import Host
from app.tui.messages import (
    ChatNote,
    FilesLoaded,
    HistoryLoaded,
    PanelStateReady,
    RuntimeBuilt,
    RuntimeFailed,
    RuntimeReady,
)
from app.tui.phase import Phase
from app.tui.workers import start
from memory.text.lines import one_line

log = logging.getLogger(__name__)

# One item per line and no column alignment: the chat beside the panel is about 52 cells wide at
# 100 columns, and aligned columns wrapped into stray lines there. The first line is the heading
# (drawn bold, in a setup block).
CONFIGURE_HELP = (
    "Setup: no model is configured\n"
    "Chatting is off; memory browsing and editing work.\n"
    "To chat, set credentials and restart:\n"
    "  export ANTHROPIC_API_KEY=sk-ant-…\n"
    "  or: export ANTHROPIC_AUTH_TOKEN=…\n"
    "Optional (an Anthropic-compatible endpoint):\n"
    "  export ANTHROPIC_BASE_URL=https://…\n"
    "Settings go in $PSEUDOCLAUDE_HOME/config.toml\n"
    "(default ~/.PseudoClaude/config.toml):\n"
    '  model = "claude-sonnet-5-5"\n'
    '  memory_model = "claude-haiku-5-5"\n'
    '  memory_mode = "auto"'
)

if TYPE_CHECKING:
    from app.agent.model.pricing import CostMeter
    from app.services.prompt_history import PromptHistory
    from app.tui.panel.feed import PanelFeed
    from widgets.panel.memory_panel import PanelState


class StartupHost(Host, Protocol):
    @property
    def panel_feed(self) -> PanelFeed: ...

    cost: CostMeter | None
    history: PromptHistory | None

    def show_settings(self) -> None: ...

    def show_history(self, messages: list[dict[str, Any]]) -> None: ...


def _could_not_start(e: BaseException) -> RuntimeFailed:
    return RuntimeFailed(one_line(f"could not start: {type(e).__name__}: {e}", 300))


class Startup:
    """Connects the App; ``flags``: the command line's setting flags when the settings are still
    to be loaded (None: the App was given them)."""

    def __init__(
        self,
        app: StartupHost,
        flags: Mapping[str, object] | None,
        *,
        resume: str | None,
        continue_latest: bool,
    ) -> None:
        self.app = app
        self._flags = dict(flags) if flags is not None else None
        self._resume = resume
        self._continue_latest = continue_latest
        self.error: str | None = None  # a bad setting: printed by run_app after the app ends
        self._snapshot_state: PanelState | None = None  # the last start's cards, from the cache
        # Read at once, while Textual sets up its first frame (most of the time to it): the frame
        # can then show the cards itself.
        self._snapshot_read = threading.Event()
        self._snapshot_found: PanelState | None = None
        threading.Thread(target=self._read_snapshot, name="panel-snapshot", daemon=True).start()
        self._early_state: PanelState | None = None  # the panel's cards read before the runtime
        self._early_shown = False
        self._runtime_shown = False  # a panel state from the runtime was shown

    # -- the panel's cards before the runtime -----------------------------------------------------

    def _read_snapshot(self) -> None:
        try:
            from app.tui.panel.snapshot import read_snapshot  # stdlib, the stat stamp: no pydantic

            self._snapshot_found = read_snapshot(self.app.bridge.home, self.app.workspace)
        finally:
            self._snapshot_read.set()

    def snapshot_panel(self) -> None:
        """The cards of the last panel state (app.tui.panel.snapshot) when the stores did not
        change since, before even the stores' imports: in the first frame when the read is done
        by the App's mount (it was started with the App), else as soon as it is."""
        if self._snapshot_read.is_set():
            self._show_snapshot()
        else:
            start(self.app, self._snapshot_later, group="panel-snapshot", exclusive=True)

    async def _snapshot_later(self) -> None:
        await asyncio.to_thread(self._snapshot_read.wait, 30)
        self._show_snapshot()

    def _show_snapshot(self) -> None:
        state = self._snapshot_found
        if state is not None and not (self._early_shown or self._runtime_shown):
            self._snapshot_state = state
            self.app.panel.show(state)  # nothing new, no jobs: the status line stays as it is

    def early_panel(self) -> None:
        """Show the panel's index without waiting for the runtime: the settings, the runtime's
        imports and the session take a second after the first frame; the cards need none of it.
        Read after the trust check, whose imports (the stores) it shares."""
        start(self.app, self._early_panel, group="panel-early", exclusive=True)

    async def _early_panel(self) -> None:
        try:
            state = (
                None
                if self.app.bridge.runtime
                else await self.app.panel_feed.early(self.app.bridge.trust.stores)
            )
        except Exception as e:  # a store that cannot be read: the runtime's start-up says why, once
            log.warning("panel cards not read early: %s", one_line(e, 300))
            return
        if state is not None and not self._runtime_shown:
            self._early_state = state
            self.app.post_message(PanelStateReady(state, self.app.status_model.info.pending))

    def panel_state_kind(self, state: PanelState) -> str | None:
        """ "snapshot" (the cache's), "early" (the cards read before the runtime) or "runtime" for
        a panel state about to be shown; None: it is not current, the snapshot once a read of the
        stores was shown, the early one once the runtime's was (the later replaces the earlier,
        never the other way)."""
        if state is self._snapshot_state:
            return None if self._early_shown or self._runtime_shown else "snapshot"
        if state is self._early_state:
            if self._runtime_shown:
                return None
            self._early_shown = True
            return "early"
        self._runtime_shown = True
        return "runtime"

    def connect(self) -> None:
        start(self.app, self._connect, group="connect", exclusive=True)

    async def _connect(self) -> None:
        app = self.app
        if app.settings is None and not await self._load_settings():
            return
        try:
            await asyncio.to_thread(app.bridge.build)
        except Exception as e:
            app.post_message(_could_not_start(e))
            return
        app.post_message(RuntimeBuilt())
        try:
            # What the first frame did without: the chat's Markdown, then the SDK (seconds).
            await asyncio.to_thread(importlib.import_module, "widgets.chat.answer_block")
            await asyncio.to_thread(app.bridge.warm_sdk)
            note = await app.bridge.open(resume=self._resume, continue_latest=self._continue_latest)
        except ValueError as e:  # a bad --resume: said once, the app goes on with a new session
            app.post_message(ChatNote(one_line(e, 400), error=True))
            try:
                note = await app.bridge.open()
            except Exception as e2:
                app.post_message(RuntimeFailed(one_line(e2, 300)))
                return
        except Exception as e:
            app.post_message(_could_not_start(e))
            return
        app.post_message(RuntimeReady(app.bridge.credentials, note))
        try:
            await app.bridge.warm_search()
        except Exception as e:  # search is a help: the app goes on without a warm cache
            log.warning("memory search caches not built: %s", one_line(e, 300))

    async def _load_settings(self) -> bool:
        """The settings from the flags, the config file and the environment; False: they are
        wrong (the app exits with the reason)."""
        app = self.app
        # Imported in a thread: a first import on the loop held the screen and the keys.
        await asyncio.to_thread(importlib.import_module, "app.agent.config.settings")
        # Not at the top: the settings bring pydantic, after the first frame (already loaded above).
        from app.agent.config.settings import SettingsError, load_settings

        try:
            settings = await asyncio.to_thread(load_settings, self._flags, home=app.bridge.home)
        except SettingsError as e:
            self.error = str(e)
            app.exit(return_code=2)
            return False
        app.settings = app.bridge.settings = settings
        for warning in settings.warnings:
            app.chat.add_note(one_line(warning, 300))
        app.show_settings()
        return True

    # -- the App's messages, routed here ------------------------------------------------------------

    def built(self) -> None:
        """The runtime object exists: the prompt history and the workspace's files load, and the
        stores are watched. (The App then reads the panel and runs what waited for the stores.)"""
        # After the first frame: this module loads before it, the history's modules need not.
        from app.services.prompt_history import PromptHistory

        app = self.app
        if app.phase is Phase.STARTING:
            app.phase = Phase.BUILT
        app.history = PromptHistory(app.bridge.home, app.workspace)
        start(app, partial(self._load_side_data, app.history), group="side")
        start(app, app.bridge.watch_stores, group="watch", exclusive=True)

    async def _load_side_data(self, history: PromptHistory) -> None:
        # After the first frame: the file lister (pathspec) stays out of it.
        from app.tui.chat.filecomplete import workspace_files

        app = self.app
        with contextlib.suppress(Exception):
            app.post_message(HistoryLoaded(await asyncio.to_thread(history.load)))
        with contextlib.suppress(Exception):
            app.post_message(FilesLoaded(await asyncio.to_thread(workspace_files, app.workspace)))

    def ready(self, message: RuntimeReady) -> None:
        """The session is open (or, without credentials, memory only). (The App then reads the
        panel and sends what waited.)"""
        # After the first frame: the prices are a pydantic model.
        from app.agent.model.pricing import CostMeter

        app = self.app
        app.cost = CostMeter(getattr(app.settings, "prices", None))
        if app.phase is not Phase.QUITTING:
            app.phase = Phase.READY if message.credentials else Phase.OFFLINE
        # Without credentials commands still work offline (/remember, /memory, /undo): the prompt
        # is enabled and a message gets the configuration help again.
        app.status_model.update(
            note="" if message.credentials else "no model configured", cost=app.cost.describe()
        )
        if app.phase is not Phase.QUITTING:
            app.prompt.disabled_reason = None
        if not message.credentials:
            self.show_configure_help()
        if message.note:
            app.chat.add_note(one_line(message.note, 300))
        messages = app.services.session.messages
        if messages:
            app.show_history(messages)

    def failed(self, message: RuntimeFailed) -> None:
        """Start-up failed, said once. (The App then says so on what waited.)"""
        app = self.app
        if app.phase is not Phase.QUITTING:
            app.phase = app.phase.after_failure()
        app.status_model.update(note="not connected")
        app.prompt.disabled_reason = "not connected"
        app.chat.add_error(message.message)

    def show_configure_help(self) -> None:
        """The setup note: why chatting is off, and how to configure a model."""
        block = self.app.chat.add_note(CONFIGURE_HELP)
        block.add_class("-setup")
        heading, _, body = CONFIGURE_HELP.partition("\n")
        block.update(Content.assemble((heading, "bold"), "\n", body))
