"""Issue 20 in print mode: the answer's last byte (and the newline after it) is on stdout,
flushed, before the turn's job is written to the spool."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import load_settings
from app.cli.print_mode import run_print
from memory.jobs.spool import Spool
from tests.support.clitools import MODEL
from tests.support.fakeapi import FakeAnthropic, text

pytestmark = pytest.mark.timeout(60)


class _Out(io.StringIO):
    """stdout that keeps what was flushed (what a reader of the pipe has)."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed = ""

    def flush(self) -> None:
        self.flushed = self.getvalue()


async def test_the_answers_last_byte_is_flushed_before_the_spool_write(
    server: FakeAnthropic, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    server.script(MODEL, text("the whole answer END"))
    out, err = _Out(), io.StringIO()
    at_spool: list[str] = []
    real = Spool.submit

    def spy(self: Spool, job: Any) -> Path:
        at_spool.append(out.flushed)
        return real(self, job)

    monkeypatch.setattr(Spool, "submit", spy)
    code = await run_print(
        "hi", load_settings({"memory_wait": 0}), ws, allow_tools=frozenset(), out=out, err=err
    )
    assert code == 0, err.getvalue()
    assert at_spool == ["the whole answer END\n"], at_spool
    assert out.getvalue() == "the whole answer END\n"
