"""memory.pace: background threads make room for a busy foreground; nothing changes otherwise."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from memory.jobs.pace import Pacer
from memory.store.fs import FS


def _burn(pacer: Pacer, seconds: float) -> tuple[float, float]:
    """CPU work with a checkpoint every few microseconds; returns (CPU seconds, wall seconds)."""
    cpu0, wall0 = time.thread_time(), time.monotonic()
    while time.thread_time() - cpu0 < seconds:
        sum(range(200))
        pacer()
    return time.thread_time() - cpu0, time.monotonic() - wall0


def _in_thread(fn, *args):  # type: ignore[no-untyped-def]
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(fn(*args)))
    t.start()
    t.join(30)
    return out[0]


def test_a_background_thread_pauses_while_the_foreground_is_busy() -> None:
    pacer = Pacer(budget=0.002, pause=0.004)
    pacer.busy(float("inf"))
    cpu, wall = _in_thread(_burn, pacer, 0.05)
    # 0.05 s of CPU in 2 ms slices: about 25 pauses of 4 ms, so at least 0.1 s of wall time.
    assert pacer.pauses >= 20
    assert wall >= cpu + 0.08


def test_no_pause_when_idle_in_the_main_thread_or_after_the_busy_time() -> None:
    pacer = Pacer(budget=0.001, pause=0.05)
    _in_thread(_burn, pacer, 0.02)  # never said busy
    assert pacer.pauses == 0
    pacer.busy(10)
    _burn(pacer, 0.02)  # the main thread is the foreground: it never pauses
    assert pacer.pauses == 0
    pacer.idle()
    _in_thread(_burn, pacer, 0.02)
    pacer.busy(0.0001)
    time.sleep(0.01)
    _in_thread(_burn, pacer, 0.02)  # its busy time is over
    assert pacer.pauses == 0 and not pacer.is_busy


def test_busy_only_extends() -> None:
    pacer = Pacer()
    pacer.busy(float("inf"))
    pacer.busy(1.0)  # a key during a turn does not end the turn's busy time
    assert pacer._busy_until == float("inf")
    pacer.idle()
    assert not pacer.is_busy


def test_every_filesystem_operation_is_a_checkpoint(tmp_path: Path) -> None:
    calls: list[str] = []
    fs = FS(pace=lambda: calls.append("pace"))
    fs.atomic_write(tmp_path / "a.md", b"x")
    fs.read_bytes(tmp_path / "a.md")
    fs.lstat(tmp_path / "a.md")
    fs.listdir(tmp_path)
    assert len(calls) >= 4
