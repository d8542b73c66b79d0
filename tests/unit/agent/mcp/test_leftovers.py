"""What a stdio server started is found by its descendants and by its tag, and a process is known
by its PID and its start time (a PID given to another process since is never signalled)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from app.agent.extensions.mcp.leftovers import TAG_VAR, alive, new_tag, proc, started_by


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


@pytest.fixture
def tagged() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    tag = new_tag()
    # A parent (this test's child) with a grandchild in a session of its own: found by the tag.
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys; p = subprocess.Popen(['sleep', '60'], "
            "start_new_session=True); sys.stdout.write(f'{p.pid}\\n'); sys.stdout.flush(); "
            "sys.stdin.read()",
        ],
        env={**os.environ, TAG_VAR: tag},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    grandchild = int(child.stdout.readline())
    # Popen returns once the grandchild's exec has begun; its environment (and command line) can
    # be read from /proc only once the kernel has laid out its new stack: wait for that.
    deadline = time.monotonic() + 10
    while not _cmdline(grandchild).startswith(b"sleep\0"):
        assert time.monotonic() < deadline, "the grandchild never ran sleep"
        time.sleep(0.01)
    try:
        yield child, tag
    finally:
        for p in started_by(child.pid, tag):
            os.kill(p.pid, 9)
        child.kill()
        child.wait()


def test_descendants_and_tagged_processes_are_found_but_not_the_server(
    tagged: tuple[subprocess.Popen[bytes], str],
) -> None:
    child, tag = tagged
    by_tree = started_by(child.pid, "")
    by_tag = started_by(None, tag)
    assert [p.name for p in by_tree] == ["sleep"]
    assert {p for p in by_tag if p.pid != child.pid} == by_tree  # the grandchild, by its tag alone
    assert child.pid not in {p.pid for p in started_by(child.pid, tag)}
    assert started_by(None, "") == set()  # no server, no tag: nothing (never the tree under PID 0)


def test_a_process_is_known_by_its_start_time(tagged: tuple[subprocess.Popen[bytes], str]) -> None:
    child, _ = tagged
    me = proc(child.pid)
    assert me is not None and alive(me)
    assert not alive(replace(me, start=me.start + 1))  # the same PID, another process
