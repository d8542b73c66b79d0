"""``pseudoclaude -p PROMPT``: one turn, the answer streamed to stdout, diagnostics on stderr.

Everything shown is stripped of terminal escape sequences (the answer, tool arguments and
results, diagnostics): model and tool output must not drive the terminal. A closed stdout
(``| head``) stops the printing quietly; the turn still completes, is kept and is submitted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from pathlib import Path
from typing import TextIO

from app.agent.config.settings import Settings
from app.agent.memory_bridge.manager import memory_completion
from app.agent.model.provider import (
    NO_CREDENTIALS,
    AnthropicProvider,
    Retrying,
    TextDelta,
    UsageEvent,
    has_credentials,
)
from app.agent.permissions.rules import Rule
from app.agent.runtime import Runtime
from app.agent.turn.events import (
    Compacted,
    MemorySubmitted,
    RunEvent,
    RunStop,
    TodosChanged,
    ToolCallFinished,
    ToolCallStarted,
)
from app.agent.turn.runner import PromptRefused
from app.cli.interrupt import EXIT_INTERRUPTED, Interrupt, interruptible
from app.cli.memory.grounding import dropped_line
from app.cli.output import closed_pipe, silence
from app.cli.print_commands import (
    EXIT_USAGE,
    apply_command,
    asks_for_help,
    prompt_with_attachments,
    resolve_prompt,
)
from memory.constants import MemoryMode
from memory.events import JobApplied, JobFailed, JobHeld, JobStarted, JobTakenOver, MemoryEvent
from memory.store.stores import untrusted_cards
from memory.text.lines import one_line
from memory.text.redact import redact
from memory.text.terminal import TerminalStreamStripper, strip_terminal, strip_terminal_deep

EXIT_OK, EXIT_ERROR = 0, 1


class PrintUI:
    """Writes the Runner's events: the answer to stdout as it arrives, the rest to stderr."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self.wrote_text = False
        self.out_closed = False
        self.err_closed = False
        self._last = "\n"
        self._tools_since_text = False
        # The answer is stripped over its stream, not per delta: a sequence cut between two
        # deltas would leave its tail on screen. One stream per response.
        self._strip = TerminalStreamStripper()
        # job -> the job that took it over (coalesced it), and the jobs whose fate was printed.
        self.took_over: dict[str, str] = {}
        self.reported: set[str] = set()  # jobs whose take-over was printed
        self.outcomes: set[str] = set()  # jobs whose outcome (applied, failed, held) was printed
        self.job_id: str | None = None  # this turn's memory job, once spooled

    # -- writing ----------------------------------------------------------------------------

    def _out(self, text: str) -> None:
        if self.out_closed or not text:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except OSError as e:
            if not closed_pipe(e):
                raise
            # The reader went away (`| head`): stop printing, finish the turn all the same.
            self.out_closed = True
            silence(self.out)

    def output(self, text: str) -> None:
        """Text for stdout that is not the model's answer (``-p /help``)."""
        self._out(strip_terminal(text))

    def diag(self, text: str) -> None:
        if self.err_closed:
            return
        try:
            self.err.write(strip_terminal(redact(text)) + "\n")
            self.err.flush()
        except OSError as e:
            if not closed_pipe(e):
                raise
            self.err_closed = True
            silence(self.err)

    # -- the Runner's events -----------------------------------------------------------------

    def __call__(self, ev: RunEvent) -> None:
        depth = getattr(ev, "depth", 0)
        if isinstance(ev, TextDelta):
            if depth:
                return  # a sub-agent's words are its tool result, not the answer
            self._answer(self._strip.feed(ev.text))
        elif isinstance(ev, UsageEvent):
            if not depth:
                self._end_answer()  # the response is complete
        elif isinstance(ev, Retrying):
            if not depth:
                self._end_answer()
            # stdout cannot take back what it printed: the new attempt starts on a fresh line.
            if not depth and self.wrote_text and self._last != "\n":
                self._out("\n")
                self._last = "\n"
            void = "" if depth else "; the partial answer above is void"
            self.diag(f"{'  ' * depth}[retrying in {ev.delay:g}s: {one_line(ev.reason, 200)}{void}]")
        elif isinstance(ev, ToolCallStarted):
            self._tools_since_text = True
            indent = "  " * (ev.depth + 1)
            args = json.dumps(strip_terminal_deep(ev.input), ensure_ascii=False)
            self.diag(f"{indent}⏺ {one_line(ev.name, 60)}({one_line(args, 120)})")
        elif isinstance(ev, ToolCallFinished):
            indent = "  " * (ev.depth + 1)
            tag = "denied" if ev.denied else ("error" if ev.result.is_error else "ok")
            # A refusal says which rule would allow the call: shown whole enough to copy it.
            shown = one_line(ev.result.content, 300 if ev.denied else 100)
            self.diag(f"{indent}  ⎿ {tag}: {shown}")
            if ev.result.ends_run is not None and not ev.depth:
                # The call hands the turn back with its answer (plan mode's plan): stdout, as written.
                self._answer(strip_terminal(ev.result.ends_run))
        elif isinstance(ev, TodosChanged):
            # The to-do list as it now stands, one line on stderr (stdout holds only the answer).
            self.diag(f"[todos {one_line(ev.todos.line(), 300)}]")
        elif isinstance(ev, Compacted):
            self.diag(f"[{one_line(ev.describe(), 300)}]")
        elif isinstance(ev, MemorySubmitted):
            self.job_id = ev.job_id
            self.diag(f"[memory: job {ev.job_id} spooled]")
        elif isinstance(ev, RunStop):
            self._end_answer()
            if self.wrote_text and self._last != "\n":
                self._out("\n")
            if ev.status == "completed":
                self.diag(f"[done; usage: {ev.usage.describe()}]")
            else:
                self.diag(f"pseudoclaude: {one_line(ev.message or ev.status, 500)}")

    def _answer(self, text: str) -> None:
        if not text:
            return
        if self._tools_since_text and self._last != "\n":
            # A new response after tool calls: its text starts on a new paragraph.
            self._out("\n\n")
        self._tools_since_text = False
        self._out(text)
        self.wrote_text = True
        self._last = text[-1]

    async def answer_shown(self) -> None:
        """The answer is complete: its last byte and the newline after it are on stdout, flushed,
        before the Runner spools the turn's job (the Runner's ``answer_shown`` hook)."""
        self._end_answer()
        if self.wrote_text and self._last != "\n":
            self._out("\n")
            self._last = "\n"

    def _end_answer(self) -> None:
        """The response's text is complete: what the stripper held (a CR) is written."""
        self._answer(self._strip.flush())

    # -- the memory manager's events ---------------------------------------------------------

    def memory(self, ev: MemoryEvent) -> None:
        if isinstance(ev, JobStarted):
            for old in ev.merged_from:
                self.took_over.setdefault(old, ev.job_id)
            return
        if isinstance(ev, JobTakenOver):
            self.took_over[ev.job_id] = ev.successor
            if ev.job_id == self.job_id and ev.job_id not in self.reported:
                # This turn's job: say which job now carries it (other jobs' are only noted).
                self.reported.add(ev.job_id)
                self.diag(f"[memory: job {ev.job_id} was taken over by job {ev.successor}]")
            return
        job_id = getattr(ev, "job_id", None)
        if isinstance(ev, JobApplied | JobFailed | JobHeld) and job_id:
            self.outcomes.add(job_id)
        ours = [k for k, v in self.took_over.items() if v == job_id]
        merged = f" (it took over job {', '.join(ours)})" if ours else ""
        if isinstance(ev, JobApplied):
            self.diag(
                f"[memory: job {ev.job_id}{merged} applied: {len(ev.applied)} op(s), {len(ev.rejected)} "
                f"rejected, {len(ev.conflicts)} conflict(s)]"
            )
            # Each citation the app did not keep, with why; the op itself applied.
            for d in ev.dropped_cites:
                self.diag(f"[memory: job {ev.job_id}: {dropped_line(d)}]")
        elif isinstance(ev, JobFailed):
            self.diag(
                f"[memory: job {ev.job_id}{merged} failed: {one_line(ev.reason, 300)}; it stays spooled "
                "(pseudoclaude memory flush)]"
            )
        elif isinstance(ev, JobHeld):
            self.diag(f"[memory: job {ev.job_id}{merged} held for review (pseudoclaude memory pending)]")


class _LogToUI(logging.Handler):
    """Log records as one line on stderr. The memory core's own warnings are left out: its
    outcomes reach print mode as events, and printing both said every failure twice."""

    def __init__(self, ui: PrintUI) -> None:
        super().__init__(logging.WARNING)
        self.ui = ui

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "memory" or record.name.startswith("memory."):
            return record.levelno >= logging.ERROR
        return True

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            self.ui.diag(f"pseudoclaude: {one_line(record.getMessage(), 300)}")


def _report_outcome(ui: PrintUI, job_id: str, outcome: object, waited: float) -> None:
    """Say what became of this turn's job, unless an event already did (once, never twice)."""
    taken = getattr(outcome, "taken_over_by", None) or ui.took_over.get(job_id)
    if not outcome:
        also = f" (it was taken over by job {taken})" if taken else ""
        ui.diag(
            f"[memory: job {job_id}{also} still running after {waited:g}s; it stays spooled and the next run "
            "(or `pseudoclaude memory flush`) applies it]"
        )
        return
    if job_id in ui.outcomes or (taken and taken in ui.outcomes):
        return
    # Finished where this process saw no event: another process's worker ran it.
    status = getattr(outcome, "status", "done")
    reason = getattr(outcome, "reason", "")
    what = {"done": "applied", "held": "held for review (pseudoclaude memory pending)"}.get(
        status, f"failed: {one_line(reason, 300)}; it stays spooled (pseudoclaude memory flush)"
    )
    if taken and job_id not in ui.reported:
        ui.diag(f"[memory: job {job_id} was taken over by job {taken}, which another process ran: {what}]")
    elif taken:
        ui.diag(f"[memory: job {taken} (it took over job {job_id}) {what}]")
    else:
        ui.diag(f"[memory: job {job_id} {what} by another process on this workspace]")


async def _open(
    ui: PrintUI, runtime: Runtime, *, resume: str | None, continue_latest: bool, trust_project: bool
) -> bool:
    """Start the runtime and open the session, saying what the person should know about it;
    False (said why) when the session cannot be opened."""
    # The answer comes first: until it is out, the memory worker is not even started (jobs are
    # still spooled; interrupted writes are recovered), so an earlier run's leftover job never
    # competes with the answer for the process; it runs after, coalesced with this turn's job
    # where it can be.
    await runtime.start(worker=False)
    if trust_project:
        # Recorded before the session opens, so its system prompt has the project index.
        await runtime.trust_project()
    try:
        note = await runtime.open_session(resume=resume, continue_latest=continue_latest)
    except ValueError as e:
        ui.diag(f"pseudoclaude: {e}")
        return False
    if note:
        ui.diag(f"[{note}]")
    if not runtime.stores.has_project_level:
        ui.diag(
            "[memory: this workspace has no project level (its project store would be the user store); "
            "notes go to the user level]"
        )
    left_out = await asyncio.to_thread(untrusted_cards, runtime.stores)
    if left_out:
        ui.diag(
            f"[memory: the project store {runtime.stores.project.dir} came with this workspace and is not "
            f"trusted: its {len(left_out)} note(s) are left out of the prompt and of memory extraction; "
            "--trust-project-memory trusts it once for this workspace]"
        )
    return True


async def run_print(
    prompt: str,
    settings: Settings,
    workspace: Path,
    *,
    allow_tools: tuple[Rule, ...] = (),
    trust_project_mcp: bool = False,
    resume: str | None = None,
    continue_latest: bool = False,
    trust_project: bool = False,
    compact: bool = False,
    images: tuple[str, ...] = (),
    out: TextIO | None = None,
    err: TextIO | None = None,
    interrupt: Interrupt | None = None,
) -> int:
    ui = PrintUI(out or sys.stdout, err or sys.stderr)
    if not has_credentials() and not asks_for_help(prompt):
        # Said before anything is created: a run that cannot ask a model leaves no session.
        ui.diag(f"pseudoclaude: {NO_CREDENTIALS}")
        return EXIT_ERROR
    handler = _LogToUI(ui)
    root = logging.getLogger()
    root.addHandler(handler)
    runtime = _runtime(settings, workspace, allow_tools, trust_project_mcp)
    runtime.ext.on_hook_note = lambda line, _failed: ui.diag(f"pseudoclaude: {line}")  # each time
    unsubscribe = runtime.manager.subscribe(ui.memory)
    try:
        command = await resolve_prompt(ui, runtime, prompt)  # /help, or a command that cannot run: no session
        if command.text is None:
            return command.code
        sent = await prompt_with_attachments(ui, runtime, command, images)  # before any session
        if sent is None:
            return EXIT_USAGE
        if not await _open(
            ui, runtime, resume=resume, continue_latest=continue_latest, trust_project=trust_project
        ):
            return EXIT_ERROR
        if compact:
            try:
                await runtime.runner.compact("", ui)
            except RuntimeError as e:  # the summary cannot make it fit: said, and the turn is not run
                ui.diag(f"pseudoclaude: {e}")
                return EXIT_ERROR
        await _extensions_ready(ui, runtime)
        apply_command(ui, runtime, command)
        # A Ctrl+C once the whole answer is out lets the turn commit (its job spooled), then ends the run.
        shown = ui.answer_shown if interrupt is None else interrupt.committing(ui.answer_shown)
        try:
            stop = await runtime.runner.run(sent, ui, answer_shown=shown)
        except PromptRefused as e:  # a UserPromptSubmit hook: nothing was sent
            ui.diag(f"pseudoclaude: {e}")
            return EXIT_ERROR
        finally:
            await runtime.start_worker()
        return await _after_turn(ui, runtime, stop, settings.memory_wait, interrupt)
    finally:
        unsubscribe()
        await runtime.close()
        root.removeHandler(handler)


async def _after_turn(
    ui: PrintUI, runtime: Runtime, stop: RunStop, memory_wait: float, interrupt: Interrupt | None
) -> int:
    """The exit code, once this turn's memory job is done or ``memory_wait`` seconds passed; a Ctrl+C
    that came while the turn committed ends the run at once, its job left spooled."""
    if interrupt is not None and interrupt.committed():
        if stop.job_id:
            ui.diag(
                f"[memory: job {stop.job_id} stays spooled; the next run (or `pseudoclaude memory flush`) "
                "applies it]"
            )
        return EXIT_INTERRUPTED
    for note in runtime.search.notices():  # a damaged search cache, rebuilt: said once
        ui.diag(f"pseudoclaude: {note}")
    if stop.status == "completed" and stop.job_id:
        outcome = await runtime.manager.wait_for(stop.job_id, memory_wait)
        _report_outcome(ui, stop.job_id, outcome, memory_wait)
    return EXIT_OK if stop.status == "completed" else EXIT_ERROR


def _runtime(
    settings: Settings, workspace: Path, allow_tools: tuple[Rule, ...], trust_project_mcp: bool
) -> Runtime:
    # The memory model's client shares the main model's: one TLS set-up before the answer, not two.
    provider = AnthropicProvider()
    completion = (
        memory_completion(settings, share=lambda: provider.client)
        if settings.memory_mode != MemoryMode.OFF
        else None
    )
    # history=False: a --continue reads the session from its last compaction on (nothing shows the rest).
    # No one to ask: what the rules (the config files', --allow-tools') do not allow is refused.
    runtime = Runtime(
        settings,
        workspace,
        ask=None,
        provider=provider,
        completion=completion,
        history=False,
        trust_project_mcp=trust_project_mcp,
    )
    if allow_tools:
        runtime.ext.allow(allow_tools, "--allow-tools")
    return runtime


async def _extensions_ready(ui: PrintUI, runtime: Runtime) -> None:
    """The MCP servers ready (in parallel, each within its start bound) so their tools are in the
    first request; what failed, was refused or waits for trust is said on stderr, a line each."""
    ext = runtime.ext
    await ext.wait_ready()
    for line in ext.notes():
        ui.diag(f"pseudoclaude: {line}")
    if ext.servers.waiting:
        ui.diag(
            "pseudoclaude: the project's .mcp.json servers are not started: --trust-project-mcp starts them "
            "for this run, or trust them once in the app"
        )
    for status in ext.mcp.status() if ext.mcp is not None else []:
        if status.state == "failed":
            ui.diag(f"pseudoclaude: MCP server {status.name} failed: {status.reason}")


def main_print(prompt: str, settings: Settings, workspace: Path, **kw: object) -> int:
    async def run(interrupt: Interrupt) -> int:
        return await run_print(prompt, settings, workspace, interrupt=interrupt, **kw)  # type: ignore[arg-type]  # kw are run_print's own keywords, passed on

    try:
        code = asyncio.run(interruptible(run))
    except KeyboardInterrupt:  # a second Ctrl+C
        code = EXIT_INTERRUPTED
    if code == EXIT_INTERRUPTED:
        with contextlib.suppress(OSError):
            sys.stderr.write("pseudoclaude: interrupted\n")
    return code
