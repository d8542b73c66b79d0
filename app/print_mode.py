"""``pseudoclaude -p PROMPT``: one turn, the answer streamed to stdout, diagnostics on stderr."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TextIO

from memory.events import JobApplied, JobFailed, JobHeld, MemoryEvent

from .runner import MemorySubmitted, Retrying, RunEvent, RunStop, TextDelta, ToolCallFinished, ToolCallStarted
from .runtime import Runtime
from .settings import Settings
from .tools import AllowListGate

EXIT_OK, EXIT_ERROR = 0, 1


def _one_line(value: object, width: int = 100) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= width else text[: width - 1] + "…"


class PrintUI:
    """Writes the Runner's events: the answer to stdout as it arrives, the rest to stderr."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self.wrote_text = False
        self._last = "\n"
        self._tools_since_text = False

    def diag(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()

    def __call__(self, ev: RunEvent) -> None:
        if isinstance(ev, TextDelta):
            if self._tools_since_text and self._last != "\n":
                # A new response after tool calls: its text starts on a new paragraph.
                self.out.write("\n\n")
            self._tools_since_text = False
            self.out.write(ev.text)
            self.out.flush()
            self.wrote_text = True
            self._last = ev.text[-1:] or self._last
        elif isinstance(ev, Retrying):
            # stdout cannot take back what it printed: the new attempt starts on a fresh line.
            if self.wrote_text and self._last != "\n":
                self.out.write("\n")
                self.out.flush()
                self._last = "\n"
            self.diag(f"[retrying in {ev.delay:g}s: {ev.reason}; the partial answer above is void]")
        elif isinstance(ev, ToolCallStarted):
            self._tools_since_text = True
            indent = "  " * (ev.depth + 1)
            args = json.dumps(ev.input, ensure_ascii=False)
            self.diag(f"{indent}⏺ {ev.name}({_one_line(args, 120)})")
        elif isinstance(ev, ToolCallFinished):
            indent = "  " * (ev.depth + 1)
            tag = "denied" if ev.denied else ("error" if ev.result.is_error else "ok")
            self.diag(f"{indent}  ⎿ {tag}: {_one_line(ev.result.content)}")
        elif isinstance(ev, MemorySubmitted):
            self.diag(f"[memory: job {ev.job_id} spooled]")
        elif isinstance(ev, RunStop):
            if self.wrote_text and self._last != "\n":
                self.out.write("\n")
                self.out.flush()
            if ev.status == "completed":
                self.diag(f"[done; usage: {ev.usage.describe()}]")
            else:
                self.diag(f"pseudoclaude: {ev.message or ev.status}")


def _memory_note(ev: MemoryEvent, ui: PrintUI) -> None:
    if isinstance(ev, JobApplied):
        ui.diag(f"[memory: job {ev.job_id} applied: {len(ev.applied)} op(s), {len(ev.rejected)} rejected, "
                f"{len(ev.conflicts)} conflict(s)]")
    elif isinstance(ev, JobFailed):
        ui.diag(f"[memory: job {ev.job_id} failed: {ev.reason}; it stays spooled (pseudoclaude memory flush)]")
    elif isinstance(ev, JobHeld):
        ui.diag(f"[memory: job {ev.job_id} held for review (pseudoclaude memory pending)]")


async def run_print(
    prompt: str,
    settings: Settings,
    workspace: Path,
    *,
    allow_tools: frozenset[str],
    resume: str | None = None,
    continue_latest: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    ui = PrintUI(out or sys.stdout, err or sys.stderr)
    runtime = Runtime(settings, workspace, gate=AllowListGate(allow_tools))
    try:
        note = runtime.open_session(resume=resume, continue_latest=continue_latest)
    except ValueError as e:
        ui.diag(f"pseudoclaude: {e}")
        return EXIT_ERROR
    if note:
        ui.diag(f"[{note}]")
    unsubscribe = runtime.manager.subscribe(lambda ev: _memory_note(ev, ui))
    await runtime.start()
    try:
        stop = await runtime.runner.run(prompt, ui)
        if stop.status == "completed" and stop.job_id:
            done = await runtime.manager.wait_for(stop.job_id, settings.memory_wait)
            if not done:
                ui.diag(f"[memory: job {stop.job_id} still running after {settings.memory_wait:g}s; it stays "
                        "spooled and the next run (or `pseudoclaude memory flush`) applies it]")
        return EXIT_OK if stop.status == "completed" else EXIT_ERROR
    finally:
        unsubscribe()
        await runtime.close()


def main_print(prompt: str, settings: Settings, workspace: Path, **kw: object) -> int:
    try:
        return asyncio.run(run_print(prompt, settings, workspace, **kw))  # type: ignore[arg-type]
    except KeyboardInterrupt:
        sys.stderr.write("pseudoclaude: interrupted\n")
        return 130
