"""A 300-turn session in print mode (what long sessions must survive): one `pseudoclaude --continue -p …`
per turn, run in this process, each turn one bash call with a 5–60 KiB output, against a fake API
with a 30,000-token window that refuses an oversized request like the real one. The session must
compact many times (offloading, then summarising) and every turn must still end with its answer.

The scripted session (tests/bench/longsession.py) is the one `make bench` measures.
"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import pytest

from tests.bench import longsession as ls
from tests.support.fakeapi import FakeAnthropic

TURNS = 300

pytestmark = pytest.mark.timeout(240)


def _session_records(home: Path) -> list[dict]:
    [log] = (home / "sessions").glob("*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def test_a_300_turn_session_with_large_tool_outputs_runs_to_the_end_in_print_mode(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    # Every turn's stderr must be clean: an SDK client an earlier test of this worker left open
    # is collected now, with no loop running, not during a turn's loop (where it would say so).
    gc.collect()
    monkeypatch.setenv("PSEUDOCLAUDE_CONTEXT_WINDOW", str(ls.WINDOW))
    monkeypatch.setenv("PSEUDOCLAUDE_OFFLOAD_BYTES", str(ls.OFFLOAD_BYTES))
    monkeypatch.setenv("PSEUDOCLAUDE_RETRY_DELAY", "0")
    ls.write_data(ws)
    with FakeAnthropic(context_window=ls.WINDOW) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        ls.answer_summaries(server)
        for turn in range(1, TURNS + 1):
            ls.script_turn(server, turn)
            code, out, err = ls.print_turn(ws, turn)
            assert code == 0, f"turn {turn} exited {code}: {err}"
            assert out == ls.answer(turn) + "\n", f"turn {turn}: {out!r} {err}"
            assert "Traceback" not in err and "pseudoclaude:" not in err, f"turn {turn}: {err}"
            assert server.remaining(ls.MODEL) == 0, f"turn {turn} left a scripted reply unused"
        assert not server.errors, server.errors[0]
        stats = ls.measure(server, home, TURNS)
        last_main = [r for r in server.requests_for(ls.MODEL) if not ls.is_summary(r.body)][-1]

    # No request was refused (too long, or an invalid conversation), and every one fitted: under
    # the compaction threshold, which is itself under the window.
    assert not stats.refused, stats.refused[:3]
    assert len(stats.main_sizes) == 2 * TURNS
    assert stats.max_main <= stats.threshold < ls.WINDOW, f"a request of {stats.max_main} tokens"
    assert max(stats.summary_sizes, default=0) <= ls.WINDOW
    # Compaction happened, many times over (300 turns of this output are ~50 windows' worth).
    assert len(stats.summary_sizes) >= 5, f"{len(stats.summary_sizes)} summary requests"
    assert stats.offloaded >= TURNS // 2

    # The last request still carries the summary (in the system prompt) and its own turn verbatim:
    # the user's words, the bash call and its result.
    system = "\n".join(b.get("text", "") for b in last_main.body["system"])
    assert "<earlier-conversation-summary>" in system and "## Summary" in system
    flat = json.dumps(last_main.body["messages"])
    assert ls.prompt(TURNS) in flat and f"end of turn {TURNS}" in flat and "toolu_0300" in flat

    # The session log keeps every turn and records each compaction as a boundary.
    records = _session_records(home)
    assert sum(r["type"] == "turn_start" for r in records) == TURNS
    assert sum(r["type"] == "compaction" for r in records) >= 5
