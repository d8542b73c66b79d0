"""Running the real CLI in a subprocess against the fake Messages API."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.fakeapi import FakeAnthropic, Recorded

ROOT = Path(__file__).resolve().parents[2]
MODEL = "claude-sonnet-5-5"
MEMORY_MODEL = "claude-haiku-5-5"


def cli_env(server: FakeAnthropic | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    if server is not None:
        env.update(server.env())
    # In-stream and memory retries back off in milliseconds here, not seconds.
    env.setdefault("PSEUDOCLAUDE_RETRY_DELAY", "0.01")
    env.update(extra)
    return env


def cli_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "app.cli.main", *args]


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_cli(server: FakeAnthropic | None, ws: Path, *args: str, timeout: float = 60, stdin: str | None = None,
            **env: str) -> Result:
    proc = subprocess.run(cli_cmd("-C", str(ws), *args), cwd=ROOT, env=cli_env(server, **env), input=stdin,
                          capture_output=True, text=True, timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr)


class Live:
    """A CLI process whose stdout and stderr are read as they arrive, with deadlines."""

    def __init__(self, server: FakeAnthropic | None, ws: Path, *args: str, **env: str) -> None:
        self.proc = subprocess.Popen(cli_cmd("-C", str(ws), *args), cwd=ROOT, env=cli_env(server, **env),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out = b""
        self.err = b""
        self.sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        os.set_blocking(self.proc.stderr.fileno(), False)
        self.sel.register(self.proc.stdout, selectors.EVENT_READ, "out")
        self.sel.register(self.proc.stderr, selectors.EVENT_READ, "err")

    def _pump(self, timeout: float) -> None:
        for key, _ in self.sel.select(timeout):
            chunk = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
            if not chunk:
                self.sel.unregister(key.fileobj)
                continue
            if key.data == "out":
                self.out += chunk
            else:
                self.err += chunk

    def wait_until(self, predicate: Any, timeout: float = 30.0, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while not predicate(self):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {what}; stdout={self.out!r} stderr={self.err!r}")
            if not self.sel.get_map():
                if predicate(self):
                    return
                raise AssertionError(f"process ended before {what}; stdout={self.out!r} stderr={self.err!r}")
            self._pump(min(left, 0.5))

    def finish(self, timeout: float = 60.0) -> Result:
        self.wait_until(lambda s: not s.sel.get_map(), timeout, "the process to close its output")
        code = self.proc.wait(timeout)
        return Result(code, self.out.decode(), self.err.decode())

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def ops_answer(*ops: dict[str, Any]) -> str:
    return json.dumps(list(ops))


def create_op(title: str, content: str, level: str = "project", type_: str = "project_knowledge",
              summary: str = "") -> dict[str, Any]:
    op = {"action": "create", "level": level, "type": type_, "title": title, "content": content}
    if summary:
        op["summary"] = summary
    return op


def system_text(req: Recorded) -> str:
    system = req.body.get("system")
    if isinstance(system, str):
        return system
    return "\n".join(b.get("text", "") for b in system or [])


def extraction_prompt(req: Recorded) -> str:
    msgs = req.body["messages"]
    assert len(msgs) == 1 and msgs[0]["role"] == "user"
    content = msgs[0]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def tool_results(req: Recorded) -> list[dict[str, Any]]:
    out = []
    for m in req.body["messages"]:
        if m["role"] == "user" and isinstance(m["content"], list):
            out += [b for b in m["content"] if b.get("type") == "tool_result"]
    return out


def result_text(block: dict[str, Any]) -> str:
    c = block.get("content")
    if isinstance(c, list):
        return "".join(b.get("text", "") for b in c)
    return str(c)
