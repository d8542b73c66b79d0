"""Running the real CLI in a subprocess against the fake Messages API."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
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


def run_cli(
    server: FakeAnthropic | None,
    ws: Path,
    *args: str,
    timeout: float = 60,
    stdin: str | None = None,
    **env: str,
) -> Result:
    """The CLI as its own process, from the zygote (real fork, real streams, SDK already imported)
    unless ``PSEUDOCLAUDE_TEST_SUBPROCESS=1`` asks for a fresh interpreter each time."""
    argv, run_env = ["-C", str(ws), *args], cli_env(server, **env)
    if os.environ.get("PSEUDOCLAUDE_TEST_SUBPROCESS") == "1":
        proc = subprocess.run(
            cli_cmd(*argv),
            cwd=ROOT,
            env=run_env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)
    code, out, err = _zygote().run("app.cli.main", argv, run_env, ROOT, (stdin or "").encode(), timeout)
    return Result(code, out.decode(), err.decode())


class Zygote:
    """The client of tests/support/zygote.py: one server per test process, started on first use."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pczygote-"))
        self.path = str(self.dir / "s")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.zygote", self.path],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line == b"ready\n", f"the CLI zygote did not start: {line!r}"

    def run(
        self, module: str, argv: list[str], env: dict[str, str], cwd: Path, stdin: bytes, timeout: float
    ) -> tuple[int, bytes, bytes]:
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(self.path)
            request = {"module": module, "argv": [module, *argv], "env": env, "cwd": str(cwd)}
            socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [in_r, out_w, err_w])
            for fd in (in_r, out_w, err_w):
                os.close(fd)
            replies = conn.makefile("rb")
            pid = json.loads(replies.readline())["pid"]
            out, err = _communicate(in_w, out_r, err_r, stdin, time.monotonic() + timeout)
            if out is None:
                os.kill(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired(["pseudoclaude", *argv], timeout)
            conn.settimeout(max(timeout, 1.0))
            status = json.loads(replies.readline())["status"]
        return status, out, err or b""


def _communicate(
    in_w: int, out_r: int, err_r: int, data: bytes, deadline: float
) -> tuple[bytes | None, bytes | None]:
    """Write ``data`` to the child's stdin and read its stdout and stderr to their ends, by the deadline."""
    sel = selectors.DefaultSelector()
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    for fd in (out_r, err_r):
        sel.register(fd, selectors.EVENT_READ)
    if data:
        os.set_blocking(in_w, False)
        sel.register(in_w, selectors.EVENT_WRITE)
    else:
        os.close(in_w)
    view = memoryview(data)
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return None, None
            for key, _ in sel.select(left):
                fd = key.fd
                if fd == in_w:
                    try:
                        view = view[os.write(fd, view[:65536]) :]
                    except BrokenPipeError:
                        view = view[:0]
                    if not view:
                        sel.unregister(fd)
                        os.close(fd)
                    continue
                chunk = os.read(fd, 65536)
                if chunk:
                    chunks[fd].append(chunk)
                else:
                    sel.unregister(fd)
        return b"".join(chunks[out_r]), b"".join(chunks[err_r])
    finally:
        for key in list(sel.get_map().values()):
            os.close(key.fd)
        for fd in (out_r, err_r):
            with contextlib.suppress(OSError):
                os.close(fd)


_ZYGOTE: Zygote | None = None


def _zygote() -> Zygote:
    global _ZYGOTE
    if _ZYGOTE is None or _ZYGOTE.proc.poll() is not None:
        _ZYGOTE = Zygote()
    return _ZYGOTE


class Live:
    """A CLI process whose stdout and stderr are read as they arrive, with deadlines."""

    def __init__(self, server: FakeAnthropic | None, ws: Path, *args: str, **env: str) -> None:
        self._start(cli_cmd("-C", str(ws), *args), cli_env(server, **env))

    @classmethod
    def command(cls, argv: list[str], env: dict[str, str]) -> Live:
        """Any command line (a driver around the CLI), read the same way."""
        live = cls.__new__(cls)
        live._start(argv, env)
        return live

    def _start(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
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


def create_op(
    title: str, content: str, level: str = "project", type_: str = "project_knowledge", summary: str = ""
) -> dict[str, Any]:
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
