"""Wires one workspace's runtime together: stores, memory manager, provider, session, Runner.

Print mode and the full-screen app both stand on this; neither builds these pieces itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from app.agent.config.settings import Settings
from app.agent.conversation.compaction import ResultStore
from app.agent.conversation.session import Session
from app.agent.conversation.session_log import SessionError
from app.agent.conversation.session_store import SessionStore
from app.agent.extensions.extensions import APP_COMMANDS, Extensions
from app.agent.memory_bridge.manager import build_manager, memory_completion
from app.agent.memory_bridge.run_memory import RunMemory
from app.agent.memory_bridge.worker_process import WorkerProcess, worker_argv
from app.agent.model.provider import AnthropicProvider, Provider, Usage
from app.agent.model.web_search import WebSearch
from app.agent.permissions.gate import Gate, RunAllowances
from app.agent.permissions.modes import PermissionMode, configured_mode
from app.agent.permissions.question import Ask
from app.agent.tools import BUILTIN_TOOLS, ToolContext, ToolRegistry
from app.agent.tools.base import PlanAnswer, PlanApproval
from app.agent.turn.deps import ContextSettings, ModelSettings, RunnerDeps, ToolSettings
from app.agent.turn.runner import Runner
from app.agent.turn.system_prompt import build_system
from app.agent.turn.tool_calls import input_limit
from app.agent.undo.checkpoints import CheckpointStore, Recorder
from memory.constants import MEMORY_MODES, Level, MemoryMode
from memory.events import JobQueued, MemoryEvent
from memory.extract.completion import Completion
from memory.search.engine import MemorySearch
from memory.store.fs import DEFAULT_FS, FS
from memory.store.journal import OwnWrites
from memory.store.stores import MemoryStores
from memory.store.transaction import TransactionError

log = logging.getLogger(__name__)

# With a session, bash keeps this much output (head and tail): what passes the offload bound is
# stored whole under the session's folder instead of being cut.
BASH_CAPTURE_CHARS = 4_000_000


def _size(session: Session) -> str:
    compacted = ", the earlier part summarised" if getattr(session, "summary", None) else ""
    return f"{len(session.messages)} messages{compacted}"


class Runtime:
    """One workspace's runtime. Every method that touches the disk is a coroutine whose file work
    runs off the event loop (the full-screen app runs all of this on Textual's loop)."""

    def __init__(
        self,
        settings: Settings,
        workspace: Path,
        *,
        ask: Ask | None = None,
        allowances: RunAllowances | None = None,
        tools: ToolRegistry = BUILTIN_TOOLS,
        provider: Provider | None = None,
        completion: Completion | None = None,
        home: Path | None = None,
        fs: FS | None = None,
        worker_process: bool = False,
        history: bool = True,
        trust_project_mcp: bool = False,
        commands: Iterable[str] = APP_COMMANDS,
        plan_approval: PlanApproval | None = None,
    ) -> None:
        self.settings = settings
        self.workspace = workspace
        # The face's question whether the person approves a plan (the app's window); None:
        # nobody can be asked, and a plan ends the turn (print mode).
        self._plan_approval = plan_approval
        # The tools the model is offered: ``tools`` (the built-ins), then the MCP servers' ready ones.
        self.tools = tools.copy()
        self.ext = self._extensions(home, commands, trust_project_mcp)
        self.gate = self._gate(ask, allowances)
        self.fs = fs if fs is not None else DEFAULT_FS
        # Constructors only compute paths; nothing here reads or writes a file.
        self.stores = MemoryStores(workspace, home, fs=self.fs)
        # Search and recall beyond the prompt's index: its caches open on first use.
        self.search = MemorySearch(self.stores)
        self.memory_mode: MemoryMode = settings.memory_mode
        self._completion = completion
        if completion is None and self.memory_mode != MemoryMode.OFF:
            completion = memory_completion(settings, home=home)
        self.manager = build_manager(
            self.stores, completion, settings, fs=self.fs, search=self.search, runs_jobs=not worker_process
        )
        # worker_process: the jobs run in a child process (`pseudoclaude memory worker`); this
        # process spools, reviews and watches (an apply never shares the screen's
        # interpreter). Print mode keeps the worker in-process: its one job is faster there than
        # in a child that must first import the SDK.
        self.on_worker_note: Callable[[str], None] | None = None
        self.on_worker_usage: Callable[[str, Usage], None] | None = None
        self.child = self._worker_child(settings, workspace, home) if worker_process else None
        self._home = home
        self.provider: Provider = provider or AnthropicProvider()
        # web_search's side request, on the main model's client when it has one.
        self.web_search = WebSearch(settings.search_model, share=self._main_client(), home=home)
        # history=False: a restored session's part before its compaction boundaries is not read
        # (print mode never shows it).
        self.sessions = SessionStore(home, history=history)
        # The checkpoints of the agent's file edits (rewind); a plain fs: no pacing of a tool's write.
        self.checkpoints = CheckpointStore(home)
        self.session: Session | None = None
        # None until open_session (callers check); typed as set because turns only run after it.
        self.runner: Runner = None  # type: ignore[assignment]
        self._started = False
        self._manager_started = False

    def _gate(self, ask: Ask | None, allowances: RunAllowances | None) -> Gate:
        """The one gate: the rules as they are now, the permission mode and the run's
        ``allowances`` decide first; what they leave to the person goes to ``ask`` (the app's
        window), and without one (print mode) is refused. The mode is the configured one from
        ``start`` on (the files read), or the person's."""
        self._mode_chosen = False  # the person chose the mode: the files no longer decide it
        # Told each change of the permission mode (the app's status line shows it).
        self.on_permission_mode: Callable[[PermissionMode], None] | None = None
        return Gate(lambda: self.ext.rules, ask=ask, allowances=allowances)

    def _main_client(self) -> Callable[[], Any] | None:
        """The main model's SDK client, for a side request to share (a test's provider has none)."""
        provider = self.provider
        if not isinstance(provider, AnthropicProvider):
            return None
        return lambda: provider.client

    def _extensions(self, home: Path | None, commands: Iterable[str], trust_project_mcp: bool) -> Extensions:
        """MCP servers, permission rules, hooks and custom commands (loaded at start, off the
        loop); the servers' tools join the runtime's tools."""
        ext = Extensions(
            self.workspace,
            home,
            builtin=commands,
            trust_project_mcp=trust_project_mcp,
            start_timeout=self.settings.mcp_start_timeout,
            call_timeout=self.settings.mcp_call_timeout,
            tools=self.tools,
        )
        self.tools.attach(ext)
        return ext

    def _worker_child(self, settings: Settings, workspace: Path, home: Path | None) -> WorkerProcess:
        env = dict(os.environ)
        if home is not None:
            env["PSEUDOCLAUDE_HOME"] = str(home)
        child = WorkerProcess(
            self.manager,
            lambda mode: worker_argv(workspace, settings.memory_model, mode, drain=settings.memory_wait),
            log_path=self.stores.paths.home / "logs" / "memory-worker.log",
            env=env,
            on_note=lambda line: self.on_worker_note(line) if self.on_worker_note is not None else None,
            on_usage=lambda m, u: self.on_worker_usage(m, u) if self.on_worker_usage is not None else None,
        )

        def wake(event: MemoryEvent) -> None:
            if isinstance(event, JobQueued):
                child.wake()

        self.manager.subscribe(wake)
        return child

    @property
    def own_writes(self) -> OwnWrites:
        """The store writes the store watcher must not report: those the manager's events announce
        (this process's, its worker child's, another process's batches seen in the spool)."""
        return self.manager.announced_writes

    @property
    def memory_enabled(self) -> bool:
        return self.memory_mode != MemoryMode.OFF

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self, *, worker: bool = True) -> None:
        """Finish interrupted transactions, then start the memory worker. Idempotent.

        Runs before any store is read for a prompt (``open_session`` calls it first). With
        ``worker=False`` the worker waits for ``start_worker`` (print mode: until its answer is
        out, nothing of memory but the recovery runs in the process).
        """
        if self._started:
            return
        self._started = True
        await asyncio.to_thread(self.ext.load)
        self.refresh_permission_mode()  # the files' mode, now that they are read
        self.ext.start()  # the MCP servers, in parallel; a turn never waits for them here
        # MEMORY.md is derived: a `git pull` or merge since the last run may have
        # left it out of step with the cards; rebuilt before anything reads the stores.
        await asyncio.to_thread(self.refresh_indexes)
        if self.memory_enabled and worker:
            await self._start_manager()
        else:
            # Memory off (or its worker later): no model request yet, but interrupted writes
            # are finished.
            await asyncio.to_thread(self.stores.recover)

    def refresh_indexes(self) -> list[str]:
        """``MemoryStores.refresh_indexes``: never fatal (a locked or read-only store is said in
        the log and used as it is; prompts never read MEMORY.md anyway)."""
        try:
            return [str(lv) for lv in self.stores.refresh_indexes()]
        except (TransactionError, OSError) as e:
            log.warning("MEMORY.md not rebuilt: %s", e)
            return []

    async def start_worker(self) -> None:
        """Start the memory worker that ``start(worker=False)`` left for later (no-op otherwise)."""
        if self.memory_enabled and self._started and not self._manager_started:
            await self._start_manager()

    async def _start_manager(self) -> None:
        self._manager_started = True
        if self.child is None:
            await self._warm_memory_client()
        await self.manager.start()
        if self.child is not None:
            self.child.start()

    async def _warm_memory_client(self) -> None:
        # The SDK client loads TLS certificates when it is built (tens of ms): build it in a
        # thread now rather than on the loop at the worker's first request.
        completion = self.manager.completion
        if completion is not None and hasattr(type(completion), "client"):
            with contextlib.suppress(Exception):
                await asyncio.to_thread(getattr, completion, "client")

    async def warm_search(self, recall_wait: float = 0.3) -> None:
        """Build the search caches in a thread now; from here on a Run's recall waits at most
        ``recall_wait`` for a cache still being built (the app calls this after its first frame)."""
        self.search.recall_wait = recall_wait
        await asyncio.to_thread(self.search.warm)

    async def close(self, timeout: float = 0.0) -> None:
        await self.ext.close()  # every MCP server shut down: no process is left
        await self.manager.close(timeout)
        if self.child is not None:
            # The child drains what is queued and exits by itself; waited for at most ``timeout``.
            await self.child.stop(timeout)
        await self._close_session()
        await asyncio.to_thread(self.search.close)
        # The memory model's client first: it may be a copy sharing the main client's pool.
        for owner in (self.manager.completion, self._completion, self.web_search, self.provider):
            aclose = getattr(owner, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _close_session(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            await asyncio.to_thread(session.close)

    # -- sessions -----------------------------------------------------------------------------

    async def open_session(self, *, resume: str | None = None, continue_latest: bool = False) -> str | None:
        """Start, continue or resume a session (closing the current one); returns a note for the user.

        Raises ValueError with a one-line reason for an unknown session id, an empty one, or a
        session of another workspace (its history, memory and tools would not match this one).
        """
        await self.start()  # recovery first: the new system prompt reads the stores
        if resume is not None and not resume.strip():
            raise ValueError("--resume needs a session id")
        if self.session is not None and self.runner.running:
            raise RuntimeError("a turn is running: cancel it or wait before switching sessions")
        previous = self.session.id if self.session is not None else None
        # The current session is closed first: it may be the one asked for (its lock is ours).
        await self._close_session()
        try:
            session, note = await self._find(resume, continue_latest)
        except BaseException:
            if previous is not None:  # the switch failed: go on where we were
                with contextlib.suppress(ValueError):
                    await self._use(await self._restore(lambda: self.sessions.open(previous)))
            raise
        if session is None:
            session = await self._restore(
                lambda: self.sessions.create(self.workspace, model=self.settings.model)
            )
        for w in getattr(session, "warnings", []) or []:
            note = f"{note}; {w}" if note else w
        await self._use(session)
        return note

    async def _find(self, resume: str | None, continue_latest: bool) -> tuple[Session | None, str | None]:
        if resume:
            session = await self._restore(lambda: self.sessions.open(resume))
            theirs, ours = os.path.realpath(session.workspace), os.path.realpath(self.workspace)
            if theirs != ours:
                await asyncio.to_thread(session.close)
                raise ValueError(
                    f"session {session.id} belongs to workspace {theirs}, not {ours}; "
                    f"run it there (pseudoclaude -C {shlex.quote(theirs)} --resume {session.id})"
                )
            return session, f"resumed session {session.id} ({_size(session)})"
        if continue_latest:
            session = await self._restore(lambda: self.sessions.latest(self.workspace))
            if session is None:
                return None, "no earlier session in this workspace: starting a new one"
            return session, f"continuing session {session.id} ({_size(session)})"
        return None, None

    async def _use(self, session: Session) -> None:
        self.session = session
        self.manager.session = session.id
        self.runner = await self._make_runner(session)
        if self.ext.hooks.hooks:
            out = await self.ext.hook("SessionStart", session_id=session.id)
            self.runner.session_context = out.context

    async def new_session(self) -> str | None:
        """``/clear``: a fresh session with the full index in its system prompt (same Manager)."""
        return await self.open_session()

    async def _restore(self, fn: Callable[[], Session | None]) -> Any:
        try:
            return await asyncio.to_thread(fn)
        except SessionError as e:
            raise ValueError(str(e)) from None

    def _recorder(self, session: Session) -> Recorder:
        """The tools' hook into the session's checkpoints; the bounds are applied at its first one."""
        store, s = self.checkpoints, self.settings
        return Recorder(
            store.session(session.id, self.workspace),
            lambda: session.turns,
            prune=lambda: store.prune(
                s.checkpoint_max_mb * 1_000_000, s.checkpoint_max_days, keep=[session.id]
            ),
        )

    async def _make_runner(self, session: Session | None) -> Runner:
        index = await asyncio.to_thread(self.stores.merged_index)
        system = await asyncio.to_thread(build_system, self.workspace, index)
        # One store of the session's results: the Runner puts into it, read_result reads from it.
        results = ResultStore(session.results_dir, self.fs) if session is not None else None
        ctx = ToolContext(
            workspace=self.workspace,
            memory=self.stores,
            search=self.search,
            bash_timeout_default=self.settings.bash_timeout,
            results=results,
            bash_capture_chars=BASH_CAPTURE_CHARS if session is not None else None,
            checkpoints=self._recorder(session) if session is not None else None,
            web_searcher=self.web_search,
            # The rules as they are at the call (one saved mid-session counts from the next call).
            host_named=lambda tool, host: self.ext.rules.names_host(tool, host),
            plan_approval=self._approve_plan if self._plan_approval is not None else None,
            planning=lambda: self.gate.permission_mode == PermissionMode.PLAN,
            todos=session,  # todo_write's list is the session's: kept in its log
        )
        s = self.settings
        memory = RunMemory(
            self.stores,
            self.manager if self.memory_enabled else None,
            self.search,
            shown_index=index,
            conversation=session.messages if session is not None else None,
            tools=self.tools,
        )
        input_bytes = input_limit(s.tool_input_max_bytes, s.context_window)
        deps = RunnerDeps(
            model=ModelSettings(
                self.provider, s.model, s.max_tokens, s.max_iterations, s.thinking_budget if s.thinking else 0
            ),
            tools=ToolSettings(ctx, self.gate, self.tools, self.ext, input_bytes),
            memory=memory,
            session=session,
            context=ContextSettings(s.context_window, s.compact_at, s.offload_bytes, results),
            system=system,
        )
        return Runner(deps)

    async def _approve_plan(self, plan: str) -> PlanAnswer:
        """``exit_plan_mode``: the face asks the person; an approval leaves plan mode for the mode
        it names (the next call counts under it), and "keep planning" stays in plan mode."""
        assert self._plan_approval is not None  # offered to the tools only with one
        answer = await self._plan_approval(plan)
        if answer.choice != "keep-planning":
            self.set_permission_mode(answer.choice)
        return answer

    # -- trust -----------------------------------------------------------------------

    async def trust_project(self) -> None:
        """Record the person's trust in the project store. Before the session's first turn the
        system prompt is rebuilt, so the first Run sees the project index; after it, the next
        Run gets the project notes as a ``<memory-update>`` (the cached prefix stays valid)."""
        await asyncio.to_thread(self.stores.trust_project)
        if self.search.recall_wait is not None:
            # The app: the store's search index was never built (untrusted at start), and a Run's
            # recall does not wait for a first build. Built in the background now, so the next
            # Run recalls from it; print mode's recall builds what it needs itself.
            await asyncio.to_thread(self.search.warm_soon, [Level.PROJECT])
        runner, session = self.runner, self.session
        if session is None or runner.running or session.messages:
            return
        index = await asyncio.to_thread(self.stores.merged_index)
        runner.set_system(await asyncio.to_thread(build_system, self.workspace, index))
        runner.reset_index(index)

    # -- permission mode ----------------------------------------------------------------------

    @property
    def permission_mode(self) -> PermissionMode:
        return self.gate.permission_mode

    def set_permission_mode(self, mode: PermissionMode | str) -> None:
        """The person's choice (Shift+Tab, a plan approved): in force from the next tool call, a
        running turn's included, for the rest of the run (a new session keeps it); the settings
        files no longer decide it. ValueError for a name that is not a mode."""
        self._mode_chosen = True
        self._put_mode(PermissionMode(mode))

    def refresh_permission_mode(self) -> None:
        """The mode the flag, the environment and the settings files give as they are read now
        (at start, and once the person trusted what the project brings), unless the person chose
        one this run."""
        if not self._mode_chosen:
            self._put_mode(configured_mode(self.settings, self.ext.rules.mode))

    def _put_mode(self, mode: PermissionMode) -> None:
        changed = mode != self.gate.permission_mode
        self.gate.permission_mode = mode
        if changed and self.on_permission_mode is not None:
            self.on_permission_mode(mode)

    # -- memory mode --------------------------------------------------------------------------

    async def set_memory_mode(self, mode: MemoryMode | str) -> None:
        """Switch memory to ``auto``, ``review`` or ``off`` now, without a restart.

        ``off``: later turns are not submitted and no extraction request is made; queued jobs
        stay spooled. Back on: the worker starts (or resumes) and runs them.
        """
        if mode not in MEMORY_MODES:
            raise ValueError(f"memory mode must be one of {', '.join(MEMORY_MODES)}, not {mode!r}")
        mode = MemoryMode(mode)
        if self.manager.completion is None and mode != MemoryMode.OFF:
            self.manager.completion = self._completion or memory_completion(self.settings, home=self._home)
        self.manager.set_mode(mode)
        if self.child is not None:
            self.child.set_mode(mode)
        self.memory_mode = mode
        if self.runner is not None:
            self.runner.manager = self.manager if mode != MemoryMode.OFF else None
        if mode != MemoryMode.OFF and self._started and not self._manager_started:
            # Memory was off at start, so the worker never ran: start it now.
            await self._start_manager()
