"""A process that has imported the SDK once and forks one real CLI process per test run.

Why: ``import anthropic`` costs about 2.7 CPU-seconds here, and the CLI tests start the CLI some
ninety times. Each run is still its own process, started with its own argv, environment, working
directory and standard streams (the test's pipes, passed over a Unix socket), and its exit status is
the real one. Only third-party packages are imported before the fork: the project's own modules are
imported fresh in every child, after its environment is in place.

Protocol, one connection per run: the client sends one JSON line ``{"module", "argv", "env", "cwd"}``
(``argv`` as ``sys.argv``, its first item replaced by the module's file) with the
child's stdin, stdout and stderr descriptors attached; the server answers ``{"pid": n}`` once the
child runs and ``{"status": n}`` (a ``subprocess`` return code) when it has ended.
"""

from __future__ import annotations

import io
import json
import os
import selectors
import socket
import sys
from typing import Any

PRELOAD = ("anthropic", "pydantic", "pydantic_settings", "yaml", "regex", "filelock")


def _stream(fd: int, like: Any, write: bool) -> io.TextIOWrapper:
    raw = io.FileIO(fd, "w" if write else "r", closefd=False)
    buffered = io.BufferedWriter(raw) if write else io.BufferedReader(raw)
    return io.TextIOWrapper(
        buffered,
        encoding=like.encoding,
        errors=like.errors,  # type: ignore[arg-type]
        line_buffering=like.line_buffering,
    )


def _become_child(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: take the run's streams, environment, directory and argv."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    like = (sys.__stdin__, sys.__stdout__, sys.__stderr__)
    sys.stdin, sys.stdout, sys.stderr = (_stream(i, like[i], i > 0) for i in range(3))
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    # As `python -m`: the working directory first on the path, argv[0] the module's file.
    sys.path[0] = request["cwd"]
    sys.argv = list(request["argv"])


def _serve(path: str) -> dict[str, Any] | None:
    """Serve until stdin closes; in a forked child, return that child's request instead."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(sys.stdin, selectors.EVENT_READ, "stdin")  # the test process ending closes it
    children: dict[int, socket.socket] = {}
    print("ready", flush=True)
    while True:
        for key, _ in sel.select(0.02):
            if key.data == "stdin":
                if not os.read(sys.stdin.fileno(), 1024):
                    return None
            elif key.data == "accept":
                conn, _ = listener.accept()
                message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                request = json.loads(message)
                pid = os.fork()
                if pid == 0:
                    sel.close()
                    listener.close()
                    for other in children.values():
                        other.close()
                    conn.close()
                    _become_child(request, fds)
                    return request
                for fd in fds:
                    os.close(fd)
                conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
                children[pid] = conn
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = children.pop(pid)
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            try:
                conn.sendall(json.dumps({"status": code}).encode() + b"\n")
            except OSError:
                pass  # the test gave up on this run (a timeout): nobody is listening
            conn.close()


if __name__ == "__main__":
    for name in PRELOAD:
        __import__(name)
    child = _serve(sys.argv[1])
    if child is None:
        sys.exit(0)
    import runpy

    # Outside every frame of the server: SystemExit ends this child as it would end `python -m`.
    runpy.run_module(child["module"], run_name="__main__", alter_sys=True)
