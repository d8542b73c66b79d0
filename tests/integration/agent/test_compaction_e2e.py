"""Long sessions end to end: the real SDK against the fake Messages API,
the Runner through the Runtime, and print mode in-process through ``app.cli.main``.

The fake (``FakeAnthropic(context_window=N)``) reports each request's size as its input tokens and
refuses a request over ``N`` like the real API; it also refuses a conversation whose roles do not
alternate or whose tool calls and results do not pair up, so every request the app sends after a
compaction is checked for validity by the server itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import load_settings
from app.agent.conversation import compaction as cmp
from app.agent.conversation.blocks import Message
from app.agent.conversation.session_store import SessionStore
from app.agent.permissions.gate import RunAllowances
from app.agent.runtime import Runtime
from app.agent.turn.events import Compacted, Compacting, ContextUsage, MemorySubmitted, RunEvent
from app.cli.main import main
from memory.store.stores import MemoryStores
from tests.support.clitools import MEMORY_MODEL, MODEL, extraction_prompt, result_text, system_text
from tests.support.fakeapi import FakeAnthropic, Recorded, Reply, http_error, request_tokens, text, tool_use
from tests.support.memtools import create

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]

HINT = re.compile(r"\n\[read_result: lines (\d+)–(\d+) of (\d+); use offset=(\d+) to read on\]\Z")
STUB_ID = re.compile(r'read_result \{"id": "(r[0-9a-f]{16})"')


def is_summary(body: Mapping[str, Any]) -> bool:
    """A summary request: the main model, no tools."""
    return "tools" not in body


def summaries(server: FakeAnthropic) -> list[Recorded]:
    return [r for r in server.requests_for(MODEL) if is_summary(r.body)]


def turns(server: FakeAnthropic) -> list[Recorded]:
    return [r for r in server.requests_for(MODEL) if not is_summary(r.body)]


def prose(tag: str, chars: int) -> str:
    """Words that only a summary can make smaller (no tool result to offload)."""
    line = f"{tag}: the parser keeps its state in one table, and the lexer hands it tokens. "
    return (line * (chars // len(line) + 1))[:chars]


def log_records(session_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in session_path.read_text().splitlines() if line.strip()]


def all_text(messages: Sequence[Message | Mapping[str, Any]]) -> str:
    """Messages (typed, or as the API got them) as one JSON text."""
    wire = [m.model_dump(mode="json") if isinstance(m, Message) else m for m in messages]
    return json.dumps(wire, ensure_ascii=False)


def assert_all_answered(server: FakeAnthropic) -> None:
    """Every request was valid for the fake (roles, pairing, size) and found its answer."""
    bad = [(r.index, r.outcome) for r in server.requests if not r.outcome.startswith("reply")]
    assert not bad, bad


@pytest.fixture
def make_runtime(ws: Path) -> Iterator[Callable[..., Any]]:
    made: list[Runtime] = []

    async def factory(**flags: Any) -> Runtime:
        flags.setdefault("memory_mode", "off")
        rt = Runtime(load_settings(flags), ws, allowances=RunAllowances(allowed={"bash"}))
        await rt.open_session()
        made.append(rt)
        return rt

    yield factory
    assert all(rt.session is None for rt in made), "close every runtime in the test"


# -- 1. lossless first, then lossy ----------------------------------------------------------------


async def test_the_next_run_offloads_before_summarising_then_summarises_when_still_over(
    server: FakeAnthropic, make_runtime: Callable[..., Any], ws: Path
) -> None:
    window = 40_000
    server.context_window = window  # the fake reports real request sizes and refuses a larger one
    big = "".join(f"row {i:05d} of the build log: compiled module {i} in 12 ms\n" for i in range(700))
    (ws / "big.txt").write_text(big)
    server.respond(MODEL, is_summary, text("SUMMARY: turn one described the parser; turn two read big.txt."))
    server.script(
        MODEL,
        text("answer one"),
        tool_use("bash", {"command": "cat big.txt"}),
        text("answer two"),
        text("answer three"),
    )
    rt = await make_runtime(context_window=window, offload_bytes=64 * 1024)  # no offload on arrival
    events: list[RunEvent] = []
    try:
        assert (await rt.runner.run("turn one " + prose("one", 60_000))).status == "completed"
        assert (await rt.runner.run("turn two: show me big.txt")).status == "completed"
        assert not summaries(server) and rt.runner.estimate() < rt.runner.threshold
        stop = await rt.runner.run("turn three " + prose("three", 60_000), events.append)
        assert stop.status == "completed", stop.message
        session_path = rt.session.path
    finally:
        await rt.close()

    assert_all_answered(server)
    # Lossless first: the old result was on disk (its stub in the transcript) before the summary.
    [summary] = summaries(server)
    prompt = extraction_prompt(summary)
    assert system_text(summary) == cmp.SUMMARY_SYSTEM
    assert cmp.STUB_PREFIX in prompt and "row 00350 of the build log" not in prompt
    kinds = [r["type"] for r in log_records(session_path)]
    assert "offload" in kinds and "compaction" in kinds
    assert kinds.index("offload") < kinds.index("compaction")
    [done] = [e for e in events if isinstance(e, Compacted)]
    assert (done.reason, done.offloaded, done.requests, done.error) == ("auto", 1, 1, "")
    assert done.summarised > 0 and done.before >= rt.runner.threshold > done.after
    assert [type(e) for e in events if isinstance(e, Compacting | Compacted)] == [Compacting, Compacted]
    # Then lossy: the request after the summary is valid (the fake checked it) and under the threshold.
    after = server.requests_for(MODEL)[-1]
    assert after.index > summary.index and not is_summary(after.body)
    assert request_tokens(after.body) < int(window * 0.8)
    assert "SUMMARY: turn one described the parser" in system_text(after)
    first = after.body["messages"][0]
    assert first["role"] == "user" and "turn three" in all_text([first])
    assert "turn one" not in all_text(after.body["messages"])


# -- 2. an offloaded result, read back in parts ---------------------------------------------------


def _unicode_output() -> str:
    rows = []
    for i in range(3_600):
        kind = i % 5
        if kind == 0:
            rows.append(f"{i:05d} 中文字符 数据行 emoji 😀👩‍💻 ünïcödé\n")
        elif kind == 1:
            rows.append(f"{i:05d} windows line\r\n")
        elif kind == 2:
            rows.append(f"{i:05d}\tcolumns\ttabs\t€\n")
        else:
            rows.append(f"{i:05d} plain ascii text for the log, a bit longer than the rest of them\n")
    rows.insert(1_700, "長" * 10_000 + "\n")  # one line longer than read_result's 4,000-character piece
    return "".join(rows) + "no final newline ✓"


async def test_an_offloaded_result_read_back_in_parts_gives_the_exact_bytes(
    server: FakeAnthropic, make_runtime: Callable[..., Any], ws: Path
) -> None:
    content = _unicode_output()
    assert len(content.encode()) > 200 * 1024
    (ws / "big.txt").write_bytes(content.encode())
    expected = f"exit code: 0\n--- stdout ---\n{content}"
    state: dict[str, Any] = {"rid": None, "reads": 0}

    def model(body: Mapping[str, Any]) -> Reply:
        # A scripted model that follows read_result's hints, as a real one would.
        last = body["messages"][-1]
        blocks = (
            [b for b in last["content"] if b.get("type") == "tool_result"]
            if isinstance(last["content"], list)
            else []
        )
        if not blocks:
            return tool_use("bash", {"command": "cat big.txt"})
        got = result_text(blocks[-1])
        if state["rid"] is None:
            m = STUB_ID.search(got)
            assert m is not None and got.startswith(cmp.STUB_PREFIX), got[:200]
            state["rid"] = m.group(1)
            return tool_use("read_result", {"id": state["rid"]})
        hint = HINT.search(got)
        if hint is None:
            return text("I have read all of it.")
        state["reads"] += 1
        return tool_use("read_result", {"id": state["rid"], "offset": int(hint.group(4))})

    server.respond(MODEL, lambda b: not is_summary(b), model)
    rt = await make_runtime()
    try:
        stop = await rt.runner.run("read big.txt all the way through")
        assert stop.status == "completed", stop.message
        stored = (rt.session.results_dir / f"{state['rid']}.txt").read_bytes()
    finally:
        await rt.close()

    assert_all_answered(server)
    assert stored == expected.encode()
    final = server.requests_for(MODEL)[-1].body["messages"]
    calls = {
        b["id"]: b for m in final if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"
    }
    parts = []
    for m in final:
        for b in m["content"] if isinstance(m["content"], list) else []:
            if b.get("type") == "tool_result" and calls[b["tool_use_id"]]["name"] == "read_result":
                got = result_text(b)
                assert not b.get("is_error") and not cmp.is_stub(got), got[:300]
                hint = HINT.search(got)
                parts.append(got[: hint.start()] if hint else got)
    assert len(parts) >= 4 and state["reads"] == len(parts) - 1
    assert "".join(parts).encode() == expected.encode()


# -- 3. --continue after a compaction -------------------------------------------------------------


def run_print(capsys: pytest.CaptureFixture[str], ws: Path, *args: str) -> tuple[int, str, str]:
    code = main(["-C", str(ws), "--memory", "off", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_continue_after_a_compaction_sends_the_compacted_conversation(
    server: FakeAnthropic, ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PSEUDOCLAUDE_CONTEXT_WINDOW", "20000")
    server.context_window = 20_000
    server.respond(MODEL, is_summary, text("SUMMARY-OF-TURN-ONE: the user described the parser."))
    server.script(MODEL, text("answer one"), text("answer two"), text("answer three"))

    code, out, err = run_print(capsys, ws, "-p", "turn one " + prose("one", 40_000))
    assert (code, out) == (0, "answer one\n"), err
    code, out, err = run_print(capsys, ws, "--continue", "-p", "turn two " + prose("two", 16_000))
    assert (code, out) == (0, "answer two\n"), err
    assert re.search(r"^\[compacted 2 messages into a summary \(context \d+% → \d+%\)\]$", err, re.M), err
    assert len(summaries(server)) == 1
    code, out, err = run_print(capsys, ws, "--continue", "-p", "turn three")
    assert (code, out) == (0, "answer three\n"), err
    assert "compacted" not in err

    assert_all_answered(server)
    third = turns(server)[-1]
    messages = third.body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert "turn two" in all_text(messages[:1]) and messages[1]["content"][0]["text"] == "answer two"
    assert "turn three" in all_text(messages[2:])
    assert "turn one" not in all_text(messages) and "answer one" not in all_text(messages)
    assert "SUMMARY-OF-TURN-ONE" in system_text(third)
    # The log keeps everything: turn one is still in the file, before the boundary.
    [session] = SessionStore().list(ws)
    records = log_records(session.path)
    boundary = next(i for i, r in enumerate(records) if r["type"] == "compaction")
    assert any("turn one" in json.dumps(r) for r in records[:boundary])


# -- 4. memory is unaffected ----------------------------------------------------------------------


async def test_a_summary_request_never_creates_a_memory_job_and_a_later_update_still_reaches_the_next_run(
    server: FakeAnthropic, make_runtime: Callable[..., Any], ws: Path
) -> None:
    window = 20_000
    server.context_window = window
    server.respond(MODEL, is_summary, text("SUMMARY: the parser was described."))
    server.script(MODEL, text("answer one"), text("answer two"), text("answer three"))
    server.script(MEMORY_MODEL, text("[]"), text("[]"), text("[]"))
    rt = await make_runtime(context_window=window, memory_mode="auto", memory_wait=10)
    submitted: list[str] = []

    def on_event(ev: RunEvent) -> None:
        if isinstance(ev, MemorySubmitted):
            submitted.append(ev.job_id)

    try:
        for prompt in ("turn one " + prose("one", 40_000), "turn two " + prose("two", 16_000)):
            stop = await rt.runner.run(prompt, on_event)
            assert stop.status == "completed" and stop.job_id
            assert await rt.manager.wait_for(stop.job_id, 10)
        assert len(summaries(server)) == 1, "turn two compacts"
        # A card lands between the compaction and the next Run.
        MemoryStores(ws).apply([(0, create("project", "Landed after compaction", "b"))], source="manual")
        stop = await rt.runner.run("turn three", on_event)
        assert stop.status == "completed" and stop.job_id
        assert await rt.manager.wait_for(stop.job_id, 10)
    finally:
        await rt.close()

    assert_all_answered(server)
    # One memory job per completed turn; the summary request was not one.
    assert len(submitted) == 3 and len(set(submitted)) == 3
    extractions = server.requests_for(MEMORY_MODEL)
    assert len(extractions) == 3
    for req in extractions:
        prompt = extraction_prompt(req)
        assert "Write the summary" not in prompt and "SUMMARY:" not in prompt
    # The update reaches the Run after the compaction, at the head of its user message.
    first_of_three = turns(server)[-1].body["messages"][-1]["content"]
    assert first_of_three[0]["text"].startswith("<memory-update>")
    assert "(project_knowledge_landed-after-compaction.md)" in first_of_three[0]["text"]
    assert first_of_three[-1] == {"type": "text", "text": "turn three"}


# -- 5. errors ------------------------------------------------------------------------------------


def test_a_failing_summary_leaves_the_conversation_as_it_was_and_says_why(
    server: FakeAnthropic, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.respond(
        MODEL, is_summary, http_error(400, message="summaries are switched off on this test server")
    )
    server.script(MODEL, text("answer one"), text("answer two"), text("answer three"))
    assert run_print(capsys, ws, "-p", "turn one")[0] == 0
    assert run_print(capsys, ws, "--continue", "-p", "turn two")[0] == 0
    [session] = SessionStore().list(ws)
    before = SessionStore().open(session.id)
    messages = before.messages
    before.close()

    code, out, err = run_print(capsys, ws, "--continue", "--compact", "-p", "turn three")
    assert (code, out) == (0, "answer three\n"), err
    [line] = [x for x in err.splitlines() if "compact" in x]
    assert line.startswith("[could not compact the conversation: ")
    assert "summaries are switched off on this test server" in line
    assert "Traceback" not in err
    assert len(summaries(server)) == 1
    # The turn ran on the whole conversation, as it was.
    sent = turns(server)[-1].body["messages"]
    assert sent[: len(messages)] == [m.model_dump(mode="json") for m in messages]
    assert "turn one" in all_text(sent)
    after = SessionStore().open(session.id)
    assert after.summary is None and after.compactions == 0 and after.messages[: len(messages)] == messages
    after.close()
    assert not any(r["type"] == "compaction" for r in log_records(session.path))


def test_a_turn_that_still_cannot_fit_fails_with_a_one_line_reason(
    server: FakeAnthropic, ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PSEUDOCLAUDE_CONTEXT_WINDOW", "20000")
    server.context_window = 20_000
    server.respond(MODEL, is_summary, text("SUMMARY"))
    server.script(MODEL, text("answer one"))
    assert run_print(capsys, ws, "-p", "turn one")[0] == 0
    # The turn's own words are larger than the window: nothing older can make room for them.
    code, out, err = run_print(capsys, ws, "--continue", "-p", "turn two " + prose("two", 100_000))
    assert code == 1 and out == ""
    assert "Traceback" not in err
    errors = [x for x in err.splitlines() if x.startswith("pseudoclaude:")]
    assert len(errors) == 1, err
    assert re.fullmatch(
        r"pseudoclaude: the conversation does not fit the model's context window \([\d,]+ of 20,000 tokens\) "
        r"even after compacting; the prompt was left out: send a shorter one",
        errors[0],
    ), errors[0]
    assert len(turns(server)) == 1, "nothing that cannot fit is sent"
    # The failed turn is left out of the conversation; the session goes on.
    server.script(MODEL, text("answer three"))
    assert run_print(capsys, ws, "--continue", "-p", "turn three")[0] == 0
    assert "turn two" not in all_text(turns(server)[-1].body["messages"])


# -- 6. --compact and the API's overflow refusal --------------------------------------------------


def test_print_mode_compact_flag_compacts_before_the_turn(
    server: FakeAnthropic, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.respond(MODEL, is_summary, text("SUMMARY-BY-FLAG: turns one and two."))
    server.script(MODEL, text("answer one"), text("answer two"), text("answer three"))
    assert run_print(capsys, ws, "-p", "turn one")[0] == 0
    assert run_print(capsys, ws, "--continue", "-p", "turn two")[0] == 0
    assert not summaries(server)

    code, out, err = run_print(capsys, ws, "--continue", "--compact", "-p", "turn three")
    assert (code, out) == (0, "answer three\n"), err
    assert re.search(r"^\[compacted \d+ messages? into a summary \(context \d+% → \d+%\)\]$", err, re.M), err
    [summary] = summaries(server)
    third = turns(server)[-1]
    assert summary.index < third.index, "the compaction comes before the turn's request"
    assert "turn one" in extraction_prompt(summary)
    assert "SUMMARY-BY-FLAG" in system_text(third)
    assert "turn one" not in all_text(third.body["messages"])
    assert "turn three" in all_text(third.body["messages"][-1:])
    assert_all_answered(server)


def test_the_compact_flag_needs_continue_or_resume(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["-C", str(ws), "--compact", "-p", "hello"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--continue or --resume" in err


async def test_a_prompt_is_too_long_refusal_compacts_and_retries_once(
    server: FakeAnthropic, make_runtime: Callable[..., Any]
) -> None:
    # The app believes the window is 200,000 tokens; the server's is smaller and it says so.
    server.context_window = 12_000
    server.respond(MODEL, is_summary, text("SUMMARY: turn one was long."))
    server.script(MODEL, text("answer one"), text("answer two"))
    rt = await make_runtime()
    events: list[RunEvent] = []
    try:
        assert (await rt.runner.run("turn one " + prose("one", 24_000))).status == "completed"
        stop = await rt.runner.run("turn two " + prose("two", 24_000), events.append)
        assert stop.status == "completed", stop.message
    finally:
        await rt.close()
    refused = [r for r in server.requests_for(MODEL) if r.outcome.startswith("invalid: prompt is too long")]
    assert len(refused) == 1
    [summary] = summaries(server)
    retried = turns(server)[-1]
    assert refused[0].index < summary.index < retried.index
    assert retried.outcome.startswith("reply") and request_tokens(retried.body) <= 12_000
    assert "turn one" not in all_text(retried.body["messages"])
    [done] = [e for e in events if isinstance(e, Compacted)]
    assert done.reason == "overflow" and done.summarised > 0 and not done.error
    assert any(isinstance(e, ContextUsage) for e in events)


async def test_a_second_refusal_ends_the_turn_with_the_apis_reason(
    server: FakeAnthropic, make_runtime: Callable[..., Any]
) -> None:
    # Even the current turn alone is over the server's window: one compaction, one retry, then
    # the API's own one-line reason (not an internal error).
    server.context_window = 5_000
    server.respond(MODEL, is_summary, text("SUMMARY"))
    server.script(MODEL, text("answer one"))
    rt = await make_runtime()
    try:
        assert (await rt.runner.run("turn one")).status == "completed"
        stop = await rt.runner.run("turn two " + prose("two", 24_000))
        conversation = list(rt.runner.conversation)
    finally:
        await rt.close()
    assert stop.status == "error"
    assert "prompt is too long: " in stop.message and "\n" not in stop.message
    assert "internal error" not in stop.message and "_Overflow" not in stop.message
    assert (
        len([r for r in server.requests_for(MODEL) if r.outcome.startswith("invalid: prompt is too long")])
        == 2
    )
    assert "turn two" not in all_text(conversation), "a turn that never got an answer is left out"


async def test_each_request_serialises_the_conversation_once_to_measure_it(
    server: FakeAnthropic, make_runtime: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The estimate before a request and the usage anchor after it measure the same conversation:
    near the window that is hundreds of kilobytes of JSON, serialised once, not twice."""
    import app.agent.turn.runner

    rt = await make_runtime()
    try:
        for i in range(3):
            server.script(MODEL, text(f"answer {i} " + "x" * 2000))
            assert (await rt.runner.run(f"question {i}")).status == "completed"
        measured: list[int] = []
        real = cmp.messages_chars

        def counting(value: Any) -> int:
            if value is rt.runner.conversation:
                measured.append(1)
            return real(value)

        monkeypatch.setattr(app.agent.turn.runner.cmp, "messages_chars", counting)
        server.script(MODEL, text("the last answer"))
        stop = await rt.runner.run("one more question")
        assert stop.status == "completed"
        assert len(measured) == 1  # one request, one measure (the estimate's, reused by the anchor)
        # The anchor it made is right: the next estimate is the usage plus what came since.
        anchor = rt.runner.compactor.anchor
        assert anchor is not None and anchor.chars < real(rt.runner.conversation)
    finally:
        await rt.close()
