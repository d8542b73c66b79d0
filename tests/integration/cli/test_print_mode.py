"""Print mode end to end: the real CLI in a subprocess, the real SDK, the fake Messages API."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from tests.support.clitools import (
    MEMORY_MODEL,
    MODEL,
    Live,
    create_op,
    extraction_prompt,
    ops_answer,
    result_text,
    run_cli,
    system_text,
    tool_results,
)
from tests.support.fakeapi import FakeAnthropic, http_error, stream_error, text, tool_use

pytestmark = pytest.mark.timeout(90)


def notes(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.md") if p.name != "MEMORY.md") if folder.exists() else []


def project_store(ws: Path) -> Path:
    return ws / ".PseudoClaude" / "memory"


def user_store() -> Path:
    return Path(os.environ["PSEUDOCLAUDE_HOME"]) / "memory"


def spool() -> list[Path]:
    d = Path(os.environ["PSEUDOCLAUDE_HOME"]) / "spool"
    return sorted(p for p in d.glob("*.json")) if d.exists() else []


# -- streaming and the memory hand-off -----------------------------------------------------------


def test_answer_streams_while_server_holds_the_rest(server: FakeAnthropic, ws: Path) -> None:
    gate = server.gate()
    server.script(
        MODEL, text("first chunk, then the rest", chunks=["first chunk", ", then the rest"], hold_after=gate)
    )
    server.script(MEMORY_MODEL, text("[]"))
    live = Live(server, ws, "-p", "hello")
    try:
        live.wait_until(lambda s: b"first chunk" in s.out, what="the first chunk on stdout")
        assert not gate.released and b"the rest" not in live.out
    finally:
        gate.release()
    res = live.finish()
    assert res.code == 0, res.err
    assert res.out == "first chunk, then the rest\n"


def test_escape_sequences_split_across_stream_chunks_leave_no_fragment_on_stdout(
    server: FakeAnthropic, ws: Path
) -> None:
    answer = "Copied \x1b]52;c;aGFja2Vk\x07it and \x1b[5mblink\x1b[0m done."
    # Cut inside the OSC 52 payload and inside both CSI sequences.
    pieces = ["Copied \x1b", "]52;c;aGFj", "a2Vk\x07it and \x1b[", "5mblink\x1b", "[0m done."]
    server.script(MODEL, text(answer, chunks=pieces))
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "copy it")
    assert res.code == 0, res.err
    assert res.out == "Copied it and blink done.\n"


def test_job_is_on_disk_when_the_stop_event_is_seen(server: FakeAnthropic, ws: Path) -> None:
    gate = server.gate()
    server.script(MODEL, text("Noted: you prefer tabs."))
    answer = ops_answer(create_op("Indent with tabs", "The user prefers tabs.", "user", "user_preference"))
    server.script(MEMORY_MODEL, text(answer, hold_before=gate))
    live = Live(server, ws, "-p", "I prefer tabs", "--memory-wait", "20")
    try:
        live.wait_until(lambda s: b"[done" in s.err, what="the stop event")
        jobs = spool()
        assert len(jobs) == 1, "the job must be spooled before the stop event is delivered"
        assert json.loads(jobs[0].read_text())["turns"][0]["messages"][0]["text"] == "I prefer tabs"
    finally:
        gate.release()
    res = live.finish()
    assert res.code == 0, res.err
    assert notes(user_store()) == ["user_preference_indent-with-tabs.md"]
    assert spool() == []


def test_extraction_holds_exactly_the_new_turn_and_the_current_index(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, text("Turn one answer: the sky is blue."))
    server.script(
        MEMORY_MODEL, text(ops_answer(create_op("Sky colour", "Blue.", summary="The sky is blue.")))
    )
    assert run_cli(server, ws, "-p", "turn one question").code == 0
    # A note written by hand after the first job: the second job's index must show it.
    hand = json.dumps([create_op("Hand note", "Written by a person.")])
    assert run_cli(None, ws, "memory", "apply", "-", stdin=hand).code == 0
    server.script(
        MODEL,
        tool_use("read_file", {"path": "README.md"}, text_before="Let me look."),
        text("Turn two answer: build with make build."),
    )
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "--continue", "-p", "turn two question")
    assert res.code == 0, res.err
    extraction = server.requests_for(MEMORY_MODEL)[-1]
    prompt = extraction_prompt(extraction)
    assert "turn two question" in prompt and "Turn two answer: build with make build." in prompt
    assert "turn one question" not in prompt and "Turn one answer" not in prompt
    assert "The build command is" not in prompt, "a tool result reached extraction"
    assert "read_file" not in prompt, "a tool call reached extraction"
    # The path the turn read is listed (a card may cite it); nothing else of the call is.
    files = prompt.split("<files>", 1)[1].split("</files>", 1)[0]
    assert "README.md" in files and prompt.count("README.md") == 1
    assert "(project_knowledge_hand-note.md)" in prompt and "(project_knowledge_sky-colour.md)" in prompt
    assert "You are PseudoClaude" not in prompt and "Written by a person." not in prompt


def test_new_session_system_prompt_has_index_not_bodies_and_read_memory_reads_one(
    server: FakeAnthropic, ws: Path
) -> None:
    ops = json.dumps([create_op("Deploy", "SECRET-BODY-TEXT: deploy with fly.", summary="How to deploy.")])
    assert run_cli(None, ws, "memory", "apply", "-", stdin=ops).code == 0
    server.script(
        MODEL,
        tool_use("read_memory", {"level": "project", "filename": "project_knowledge_deploy.md"}),
        text("Deploy with fly."),
    )
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "how do I deploy?")
    assert res.code == 0, res.err
    first, second = server.requests_for(MODEL)
    system = system_text(first)
    printed = run_cli(None, ws, "memory", "index").out
    assert printed.strip() and f"<memory-index>\n{printed.rstrip(chr(10))}\n</memory-index>" in system
    assert "- [project_knowledge] Deploy — How to deploy. (project_knowledge_deploy.md)" in system
    assert "SECRET-BODY-TEXT" not in system
    assert first.body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    [result] = tool_results(second)
    assert "SECRET-BODY-TEXT: deploy with fly." in result_text(result) and not result.get("is_error")


# -- tools, permissions, sub-agents ---------------------------------------------------------------


def test_tool_loop_with_allowed_write_and_bash(server: FakeAnthropic, ws: Path) -> None:
    server.script(
        MODEL,
        tool_use("write_file", {"path": "hello.txt", "content": "hi there\n"}),
        tool_use("bash", {"command": "cat hello.txt; echo oops >&2; exit 3"}),
        text("Wrote and checked it."),
    )
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "write hello", "--allow-tools", "write_file,bash")
    assert res.code == 0, res.err
    assert (ws / "hello.txt").read_text() == "hi there\n"
    results = tool_results(server.requests_for(MODEL)[-1])
    assert len(results) == 2
    bash_out = result_text(results[1])
    assert "hi there" in bash_out and "oops" in bash_out and "3" in bash_out and results[1].get("is_error")
    assert "⏺ write_file" in res.err and "⏺ bash" in res.err
    assert res.out == "Wrote and checked it.\n"


def test_denied_write_returns_error_result_and_turn_goes_on(server: FakeAnthropic, ws: Path) -> None:
    server.script(
        MODEL, tool_use("write_file", {"path": "x.txt", "content": "x"}), text("I could not write it.")
    )
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "write x")
    assert res.code == 0, res.err
    assert not (ws / "x.txt").exists()
    [result] = tool_results(server.requests_for(MODEL)[-1])
    assert (
        result.get("is_error") and "denied" in result_text(result) and "--allow-tools" in result_text(result)
    )


def test_path_escaping_the_workspace_is_refused(server: FakeAnthropic, ws: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    server.script(MODEL, tool_use("read_file", {"path": "../secret.txt"}), text("Refused."))
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "read the secret")
    assert res.code == 0, res.err
    [result] = tool_results(server.requests_for(MODEL)[-1])
    assert result.get("is_error") and "TOP SECRET" not in result_text(result)


def test_sub_agent_turn_extracts_once(server: FakeAnthropic, ws: Path) -> None:
    server.script(
        MODEL,
        tool_use("task", {"description": "find build", "prompt": "How is the project built?"}),
        # The sub-agent's own loop: one tool call, then its report.
        tool_use("grep", {"pattern": "build"}),
        text("SUBAGENT REPORT: make build"),
        text("The project is built with make build."),
    )
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "how is it built?")
    assert res.code == 0, res.err
    reqs = server.requests_for(MODEL)
    assert len(reqs) == 4
    sub_first = reqs[1]
    assert sub_first.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "How is the project built?"}]}
    ]
    assert {t["name"] for t in sub_first.body["tools"]} == {
        "read_file",
        "list_files",
        "grep",
        "read_memory",
        "search_memory",
        "read_result",
    }
    [result] = tool_results(reqs[3])
    assert "SUBAGENT REPORT" in result_text(result)
    assert len(server.requests_for(MEMORY_MODEL)) == 1


# -- turns that must never reach memory ------------------------------------------------------------


def _no_extraction(server: FakeAnthropic) -> None:
    assert server.requests_for(MEMORY_MODEL) == []
    assert spool() == []


def test_mid_stream_error_retried_then_fails_without_extraction(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, *[stream_error(type="overloaded_error") for _ in range(3)])
    res = run_cli(server, ws, "-p", "hi")
    assert res.code == 1
    assert res.err.count("[retrying") == 2 and "gave up after 3 attempts" in res.err
    _no_extraction(server)


def test_mid_stream_error_then_success_streams_the_retry(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, stream_error(type="overloaded_error"), text("all good"))
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "hi")
    assert res.code == 0, res.err
    assert res.out.endswith("all good\n")
    # The void partial answer is never stored: the turn's extraction sees only the good one.
    assert "all good" in extraction_prompt(server.requests_for(MEMORY_MODEL)[0])


def test_bad_request_400_is_one_line_and_not_extracted(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, http_error(400, message="messages: bad things"))
    res = run_cli(server, ws, "-p", "hi")
    assert res.code == 1
    last = res.err.strip().splitlines()[-1]
    assert last.startswith("pseudoclaude: ") and "400" in last and "bad things" in last
    _no_extraction(server)


def test_max_tokens_stop_is_not_extracted(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, text("a long answer that was cut", stop_reason="max_tokens"))
    res = run_cli(server, ws, "-p", "hi")
    assert res.code == 1 and "max_tokens" in res.err
    _no_extraction(server)


def test_max_iterations_stop_is_not_extracted(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, *[tool_use("list_files", {}) for _ in range(3)])
    res = run_cli(server, ws, "-p", "loop", "--max-iterations", "2")
    assert res.code == 1 and "max-iterations" in res.err
    assert len(server.requests_for(MODEL)) == 2
    _no_extraction(server)


@pytest.mark.parametrize(
    ("status", "expect"),
    [(401, "401"), (404, "unknown model"), (429, "rate limited"), (529, "overloaded")],
)
def test_api_failures_have_one_line_messages(
    server: FakeAnthropic, ws: Path, status: int, expect: str
) -> None:
    # The SDK's own retries run for the main model; retry-after-ms keeps them quick here.
    server.script(MODEL, *[http_error(status, retry_after_ms=1) for _ in range(3)])
    res = run_cli(server, ws, "-p", "hi")
    assert res.code == 1
    last = res.err.strip().splitlines()[-1]
    assert last.startswith("pseudoclaude: ") and expect in last


def test_no_credentials_and_connection_refused(ws: Path) -> None:
    res = run_cli(None, ws, "-p", "hi")
    assert res.code == 1 and "no credentials" in res.err and "ANTHROPIC_API_KEY" in res.err
    res = run_cli(None, ws, "-p", "hi", ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL="http://127.0.0.1:9")
    assert res.code == 1 and "cannot connect to http://127.0.0.1:9" in res.err


# -- memory jobs that outlive the process ----------------------------------------------------------


def test_quitting_before_memory_answers_leaves_job_spooled_and_flush_applies_it_once(
    server: FakeAnthropic, ws: Path
) -> None:
    gate = server.gate()
    server.script(MODEL, text("ok"))
    answer = ops_answer(create_op("Use pnpm", "The project uses pnpm.", summary="pnpm, not npm."))
    server.script(MEMORY_MODEL, text(answer, hold_before=gate))
    res = run_cli(server, ws, "-p", "we use pnpm here", "--memory-wait", "0.5")
    gate.release()
    assert res.code == 0, res.err
    assert "stays spooled" in res.err
    assert len(spool()) == 1 and notes(project_store(ws)) == []
    pending = run_cli(None, ws, "memory", "pending")
    assert "we use pnpm here" in pending.out and "queued" in pending.out
    server.script(MEMORY_MODEL, text(answer))
    res = run_cli(server, ws, "memory", "flush", "--timeout", "30")
    assert res.code == 0, res.err
    assert notes(project_store(ws)) == ["project_knowledge_use-pnpm.md"]
    assert spool() == []
    res = run_cli(server, ws, "memory", "flush", "--timeout", "5")
    assert res.code == 0 and notes(project_store(ws)) == ["project_knowledge_use-pnpm.md"]


def test_memory_500s_leave_job_failed_and_retryable_while_turn_exits_0(
    server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, text("answer"))
    server.script(MEMORY_MODEL, *[http_error(500) for _ in range(3)])
    res = run_cli(server, ws, "-p", "remember nothing", "--memory-wait", "30")
    assert res.code == 0, res.err
    assert res.out == "answer\n" and "failed" in res.err
    assert len(server.requests_for(MEMORY_MODEL)) == 3, "the memory client's SDK retries must be off"
    pending = run_cli(None, ws, "memory", "pending")
    assert "failed" in pending.out and "500" in pending.out
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Recovered", "x"))))
    res = run_cli(server, ws, "memory", "flush", "--timeout", "30")
    assert res.code == 0, res.err
    assert notes(project_store(ws)) == ["project_knowledge_recovered.md"]


def test_memory_answer_without_json_is_kept_visible(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, text("answer"))
    server.script(MEMORY_MODEL, text("I think nothing here is worth saving."), text("Still no JSON, sorry."))
    res = run_cli(server, ws, "-p", "hi", "--memory-wait", "30")
    assert res.code == 0, res.err
    [job] = spool()
    data = json.loads(job.read_text())
    assert data["state"] == "failed" and "Still no JSON" in (data.get("raw_answer") or "")
    assert "failed" in run_cli(None, ws, "memory", "pending").out


def test_memory_off_makes_no_memory_request(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, text("answer"))
    res = run_cli(server, ws, "-p", "hi", "--memory", "off")
    assert res.code == 0, res.err
    _no_extraction(server)


def test_held_memory_response_does_not_delay_the_answer(server: FakeAnthropic, ws: Path) -> None:
    def time_to_answer(*args: str) -> float:
        t0 = time.monotonic()
        live = Live(server, ws, "-p", "hi", "--memory-wait", "0", *args)
        live.wait_until(lambda s: b"[done" in s.err, what="the answer")
        elapsed = time.monotonic() - t0
        live.finish()
        return elapsed

    gate = server.gate()
    server.script(MODEL, text("answer with memory off"), text("answer with memory held"))
    server.script(MEMORY_MODEL, text("[]", hold_before=gate))
    off = time_to_answer("--memory", "off")
    held = time_to_answer()
    gate.release()
    # Measured side by side in one run: start-up dominates both; the held request adds nothing.
    assert held < off * 1.5 + 0.5, f"answer with memory held took {held:.2f}s vs {off:.2f}s with memory off"


def test_an_earlier_runs_spooled_job_waits_until_this_runs_answer_is_out(
    server: FakeAnthropic, ws: Path
) -> None:
    """The answer comes first: the memory worker starts only once it is out, so a job left by an
    earlier run is asked for after this run's answer request, never before it or beside it."""
    gate = server.gate()
    server.script(MODEL, text("first answer"), text("second answer"))
    server.script(MEMORY_MODEL, text("[]", hold_before=gate))
    first = run_cli(server, ws, "-p", "first", "--memory-wait", "0.2")
    gate.release()
    assert first.code == 0 and "stays spooled" in first.err, first.err
    assert len(spool()) == 1
    seen = len(server.requests)
    server.script(MEMORY_MODEL, text("[]"))
    second = run_cli(server, ws, "-p", "second", "--memory-wait", "30")
    assert second.code == 0 and second.out == "second answer\n", second.err
    models = [r.model for r in server.requests[seen:] if r.path == "/v1/messages"]
    assert models[0] == MODEL and MEMORY_MODEL in models, models
    assert spool() == []  # both turns' jobs ran, after the answer (coalesced where they could be)


# -- more in-stream failures the runtime retries itself ---------------------------------------------


@pytest.mark.parametrize("fault", ["drop_connection", "truncated"])
def test_dropped_or_unterminated_stream_is_retried(server: FakeAnthropic, ws: Path, fault: str) -> None:
    import tests.support.fakeapi as fake

    broken = getattr(fake, fault)(reply=text("void partial answer", chunks=["void", " partial answer"]))
    server.script(MODEL, broken, text("the real answer"))
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "hi", "--memory-wait", "10")
    assert res.code == 0, res.err
    assert "[retrying" in res.err and res.out.endswith("the real answer\n")
    prompt = extraction_prompt(server.requests_for(MEMORY_MODEL)[0])
    assert "the real answer" in prompt and "void" not in prompt


# -- the system prompt, sessions and settings -------------------------------------------------------


def test_system_prompt_has_workspace_instructions(server: FakeAnthropic, ws: Path) -> None:
    (ws / "AGENTS.md").write_text("Always run `make lint` before committing.\n")
    (ws / "CLAUDE.md").write_text("Prefer small functions.\n")
    server.script(MODEL, text("ok"))
    res = run_cli(server, ws, "-p", "hi", "--memory", "off")
    assert res.code == 0, res.err
    system = system_text(server.requests_for(MODEL)[0])
    assert "Always run `make lint` before committing." in system and "Prefer small functions." in system
    assert system.index("AGENTS.md") < system.index("<memory-index>")


def test_continue_and_resume_restore_the_conversation(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, text("first answer"), text("second answer"), text("third answer"))
    res = run_cli(server, ws, "--continue", "-p", "first question", "--memory", "off")
    assert res.code == 0 and "no earlier session" in res.err and "starting a new one" in res.err
    assert run_cli(server, ws, "--continue", "-p", "second question", "--memory", "off").code == 0
    second = server.requests_for(MODEL)[1].body["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert "first question" in json.dumps(second) and "first answer" in json.dumps(second)
    sessions = sorted((Path(os.environ["PSEUDOCLAUDE_HOME"]) / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1
    # A fresh session, then --resume of the first one by an id prefix.
    server.script(MODEL, text("fresh answer"))
    assert run_cli(server, ws, "-p", "unrelated", "--memory", "off").code == 0
    res = run_cli(server, ws, "--resume", sessions[0].stem[:20], "-p", "third question", "--memory", "off")
    assert res.code == 0, res.err
    resumed = json.dumps(server.requests_for(MODEL)[-1].body["messages"])
    assert "second answer" in resumed and "unrelated" not in resumed
    res = run_cli(server, ws, "--resume", "nope", "-p", "x")
    assert res.code == 1 and res.err.strip().splitlines()[-1].startswith("pseudoclaude: ")


def test_settings_precedence_flag_env_file(server: FakeAnthropic, ws: Path) -> None:
    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('model = "model-from-file"\nmemory_mode = "off"\n')
    server.script("model-from-file", text("a"))
    server.script("model-from-env", text("b"))
    server.script("model-from-flag", text("c"))
    assert run_cli(server, ws, "-p", "1").code == 0
    assert run_cli(server, ws, "-p", "2", PSEUDOCLAUDE_MODEL="model-from-env").code == 0
    assert (
        run_cli(server, ws, "-p", "3", "--model", "model-from-flag", PSEUDOCLAUDE_MODEL="model-from-env").code
        == 0
    )
    assert [r.model for r in server.requests] == ["model-from-file", "model-from-env", "model-from-flag"]
    (home / "config.toml").write_text('model = "model-from-file"\nmemory_mode = "off"\ncolour = "blue"\n')
    server.script("model-from-file", text("d"))
    res = run_cli(server, ws, "-p", "4")
    assert res.code == 0 and "unknown key 'colour'" in res.err
    (home / "config.toml").write_text('memory_mode = "sometimes"\n')
    res = run_cli(server, ws, "-p", "5")
    assert res.code == 2 and "config.toml" in res.err and "memory_mode" in res.err


def test_usage_errors_exit_2(ws: Path) -> None:
    for args in (
        ["-p", "x", "--allow-tools", "rm_rf"],
        ["-p", "x", "--max-iterations", "0"],
        ["-p", "x", "--memory", "sometimes"],
        ["-p", "   "],
        ["--continue", "--resume", "a", "-p", "x"],
    ):
        res = run_cli(None, ws, *args)
        assert res.code == 2, (args, res.err)
        assert res.err.strip().count("\n") <= 1 or "usage" in res.err


def test_flush_all_runs_every_workspace(server: FakeAnthropic, ws: Path, tmp_path: Path) -> None:
    from memory.jobs.spool import Spool, make_job
    from memory.model import Turn, TurnMessage
    from memory.store.paths import Paths, resolve_workspace

    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    for w in (ws, other):
        real = resolve_workspace(w)
        Spool(Paths.for_workspace(real)).submit(
            make_job(real, [Turn(messages=[TurnMessage(role="user", text=f"remember {w.name}")])])
        )
    assert len(spool()) == 2
    server.script(MEMORY_MODEL, text(ops_answer(create_op("A", "a"))), text(ops_answer(create_op("B", "b"))))
    res = run_cli(server, ws, "memory", "flush", "--all", "--timeout", "30")
    assert res.code == 0, res.err
    assert spool() == [] and notes(project_store(ws)) and notes(project_store(other))
    assert len(server.requests_for(MEMORY_MODEL)) == 2


def test_no_prompt_prints_status_and_how_to_configure(ws: Path) -> None:
    res = run_cli(None, ws)
    assert res.code == 0
    assert f"workspace {ws}" in res.out and "ANTHROPIC_API_KEY" in res.out and "0 spooled job(s)" in res.out


def test_review_mode_holds_ops_until_approved(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, text("ok"))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Keep", "kept"), create_op("Drop", "dropped"))))
    res = run_cli(server, ws, "-p", "review this", "--memory", "review", "--memory-wait", "30")
    assert res.code == 0, res.err
    assert "held for review" in res.err and notes(project_store(ws)) == []
    pending = run_cli(None, ws, "memory", "pending")
    assert "held" in pending.out and "2 held op(s)" in pending.out and "review this" in pending.out
    job_id = pending.out.split()[0]
    assert run_cli(None, ws, "memory", "approve", job_id, "0").code == 0
    assert notes(project_store(ws)) == ["project_knowledge_keep.md"]
    rest = run_cli(None, ws, "memory", "pending").out.split()[0]
    assert run_cli(None, ws, "memory", "reject", rest).code == 0
    assert run_cli(None, ws, "memory", "pending").out == "no pending memory jobs\n"
    assert notes(project_store(ws)) == ["project_knowledge_keep.md"]


def test_sdk_environment_auth_token_and_headers(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, text("ok"))
    env = {"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "tok-123"}
    res = run_cli(server, ws, "-p", "hi", "--memory", "off", **env)
    assert res.code == 0, res.err
    [req] = server.requests_for(MODEL)
    assert req.headers["authorization"] == "Bearer tok-123"
    assert req.headers["anthropic-version"] == "2026-10-21"
    assert "temperature" not in req.body


def test_ctrl_c_mid_answer_leaves_a_consistent_session_and_no_job(server: FakeAnthropic, ws: Path) -> None:
    import signal

    # The barrier: the rest of the answer is held (longer than every wait here) until the test has
    # seen the cancel take effect, so a lost SIGINT fails as such, never as a whole answer.
    gate = server.gate(timeout=100)
    server.script(MODEL, text("partial answer", chunks=["partial", " answer"], hold_after=gate))
    live = Live(server, ws, "-p", "hi")
    try:
        live.wait_until(lambda s: b"partial" in s.out, what="the first chunk")
        live.proc.send_signal(signal.SIGINT)
        live.wait_until(lambda s: b"cancelled" in s.err, 45, "the turn to be cancelled (the SIGINT was lost)")
        res = live.finish()
    finally:
        gate.release()
        live.kill()
    assert not gate.timed_out and res.out == "partial\n"
    assert res.code == 130 and "cancelled" in res.err
    [session] = (Path(os.environ["PSEUDOCLAUDE_HOME"]) / "sessions").glob("*.jsonl")
    lines = [json.loads(x) for x in session.read_text().splitlines()]
    messages = [x["message"] for x in lines if x["type"] == "message"]
    # The app's note closes the turn as a user-role block: nothing is put in the model's mouth.
    assert [m["role"] for m in messages] == ["user", "user"]
    assert messages[-1]["content"][0]["text"].startswith("[PseudoClaude: this turn was interrupted")
    assert lines[-1]["type"] == "turn_end" and lines[-1]["status"] == "cancelled"
    _no_extraction(server)


# -- defects -----------------------------------------------------------------------------------


def sessions_dir() -> Path:
    return Path(os.environ["PSEUDOCLAUDE_HOME"]) / "sessions"


def test_closed_stdout_stops_printing_quietly_and_the_turn_is_kept_and_submitted(
    server: FakeAnthropic, ws: Path
) -> None:
    gate = server.gate()
    answer = "line one\n" + "".join(f"line {i}\n" for i in range(2, 2000))
    server.script(MODEL, text(answer, chunks=["line one\n", answer[len("line one\n") :]], hold_after=gate))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Piped", "Kept after a closed pipe."))))
    live = Live(server, ws, "-p", "count lines", "--memory-wait", "20")
    try:
        live.wait_until(lambda s: b"line one" in s.out, what="the first line")
        # `| head -1`: the reader takes what it wants and goes away.
        assert live.proc.stdout is not None
        live.sel.unregister(live.proc.stdout)
        live.proc.stdout.close()
    finally:
        gate.release()
    live.wait_until(lambda s: not s.sel.get_map(), 60, "the process to close stderr")
    code = live.proc.wait(60)
    err = live.err.decode()
    assert code == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "Broken pipe" not in err
    [session] = sessions_dir().glob("*.jsonl")
    records = [json.loads(x) for x in session.read_text().splitlines()]
    [assistant] = [
        r["message"] for r in records if r["type"] == "message" and r["message"]["role"] == "assistant"
    ]
    assert assistant["content"][0]["text"] == answer, "the whole answer is kept"
    assert records[-1]["status"] == "completed"
    assert notes(project_store(ws)) == ["project_knowledge_piped.md"], "the turn was submitted to memory"


def test_non_utf8_prompt_bytes_become_replacement_characters_and_continue_still_works(
    server: FakeAnthropic, ws: Path
) -> None:
    import subprocess

    from tests.support.clitools import ROOT, cli_cmd, cli_env

    server.script(MODEL, text("first"), text("second"), text("third"))
    argv = [os.fsencode(a) for a in cli_cmd("-C", str(ws), "--memory", "off", "-p")] + [b"bad\xffbyte"]
    proc = subprocess.run(argv, cwd=ROOT, env=cli_env(server), capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    stdin = subprocess.run(
        cli_cmd("-C", str(ws), "--memory", "off", "--continue", "-p", "-"),
        cwd=ROOT,
        env=cli_env(server),
        input=b"from stdin \xfe\xff\n",
        capture_output=True,
        timeout=60,
    )
    assert stdin.returncode == 0, stdin.stderr
    res = run_cli(server, ws, "--continue", "-p", "and again", "--memory", "off")
    assert res.code == 0, res.err
    sent = json.dumps(server.requests_for(MODEL)[-1].body["messages"], ensure_ascii=False)
    assert "bad\ufffdbyte" in sent and "from stdin \ufffd\ufffd" in sent


def test_a_run_without_credentials_creates_no_session(ws: Path) -> None:
    res = run_cli(None, ws, "-p", "hi")
    assert res.code == 1 and "no credentials" in res.err
    assert not sessions_dir().exists() or list(sessions_dir().glob("*.jsonl")) == []


def test_resume_of_another_workspaces_session_is_refused_and_an_empty_id_is_a_usage_error(
    server: FakeAnthropic, ws: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    server.script(MODEL, text("elsewhere"))
    assert run_cli(server, other, "-p", "in the other workspace", "--memory", "off").code == 0
    [session] = sessions_dir().glob("*.jsonl")
    res = run_cli(server, ws, "--resume", session.stem, "-p", "here", "--memory", "off")
    assert res.code == 1
    last = res.err.strip().splitlines()[-1]
    assert last.startswith("pseudoclaude: ") and f"belongs to workspace {other}" in last
    assert len(server.requests_for(MODEL)) == 1, "nothing was sent for the refused resume"
    res = run_cli(server, ws, "--resume", "", "-p", "here")
    assert res.code == 2 and "--resume needs a session id" in res.err
    assert len(list(sessions_dir().glob("*.jsonl"))) == 1, "no new session for an empty id"


def test_credentials_in_the_base_url_never_reach_stderr_or_the_session(ws: Path) -> None:
    url = "http://alice:s3cretpass@127.0.0.1:9"
    res = run_cli(None, ws, "-p", "hi", ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=url)
    assert res.code == 1 and "cannot connect to http://" in res.err
    assert "s3cretpass" not in res.err
    for session in sessions_dir().glob("*.jsonl"):
        assert "s3cretpass" not in session.read_text()


def test_each_memory_failure_is_printed_once(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, text("answer"))
    server.script(MEMORY_MODEL, *[http_error(500, message="memory backend down") for _ in range(3)])
    res = run_cli(server, ws, "-p", "remember nothing", "--memory-wait", "30")
    assert res.code == 0, res.err
    assert res.err.count("memory backend down") == 1, res.err


def test_a_failed_turn_is_not_sent_back_on_continue(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, http_error(400, message="messages: too long"), text("fresh answer"))
    assert run_cli(server, ws, "-p", "too long a question", "--memory", "off").code == 1
    res = run_cli(server, ws, "--continue", "-p", "short question", "--memory", "off")
    assert res.code == 0, res.err
    sent = server.requests_for(MODEL)[-1].body["messages"]
    assert sent == [{"role": "user", "content": [{"type": "text", "text": "short question"}]}]


def test_a_job_coalesced_by_another_process_reports_which_job_took_it_over(
    server: FakeAnthropic, ws: Path
) -> None:
    busy = server.gate("the first worker's extraction")
    server.script(MODEL, text("answer a"), text("answer b"), text("answer c"))
    # The first job holds the worker; the two queued behind it are coalesced into one job.
    server.script(
        MEMORY_MODEL,
        text("[]", hold_before=busy),
        *[text(ops_answer(create_op("Shared fact", "Both later turns said it."))) for _ in range(3)],
    )
    first = Live(server, ws, "-p", "turn a", "--memory-wait", "30")
    later: list[Live] = []
    try:
        assert busy.wait_reached(30), first.err
        for prompt in ("turn b", "turn c"):
            live = Live(server, ws, "-p", prompt, "--memory-wait", "60")
            later.append(live)
            live.wait_until(lambda s: b"spooled]" in s.err, what=f"{prompt}'s job on disk")
    finally:
        busy.release()
    results = [first.finish(), *(live.finish() for live in later)]
    assert all(r.code == 0 for r in results), [r.err for r in results]
    said = [r.err for r in results[1:] if "taken over by job" in r.err or "took over job" in r.err]
    assert said, [r.err for r in results]
    for err in said:
        line = next(x for x in err.splitlines() if "taken over by job" in x or "took over job" in x)
        assert re.search(r"(taken over by job|took over job) \d{20}-[0-9a-f]{8}", line), line
    assert notes(project_store(ws)) == ["project_knowledge_shared-fact.md"]


def test_a_workspace_at_home_says_it_has_no_project_level(server: FakeAnthropic) -> None:
    home = Path(os.environ["HOME"])  # the default PSEUDOCLAUDE_HOME is under it: one folder, two levels
    res = run_cli(None, home)
    assert res.code == 0, res.err
    assert "no project level" in res.out and "user note(s)" in res.out
    server.script(MODEL, text("hi"))
    res = run_cli(server, home, "-p", "hello", "--memory", "off")
    assert res.code == 0, res.err
    assert "no project level" in res.err


def test_memory_flush_closes_its_sdk_client_before_its_event_loop_ends(
    server: FakeAnthropic, ws: Path, monkeypatch
) -> None:
    """Else the client's connections are closed when it is collected, on a closed loop, and a
    traceback ("Event loop is closed") is printed by whatever runs next in the process."""
    import app.agent.memory_bridge.completion
    from app.cli.main import main

    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    gate = server.gate()
    server.script(MODEL, text("ok"))
    server.script(MEMORY_MODEL, text("[]", hold_before=gate))
    res = run_cli(server, ws, "-p", "hi", "--memory-wait", "0.2")
    gate.release()
    assert res.code == 0 and len(spool()) == 1, res.err
    server.script(MEMORY_MODEL, text("[]"))
    clients: list[object] = []
    real = app.agent.memory_bridge.completion.AnthropicCompletion

    class Recording(real):  # type: ignore[misc, valid-type]
        @property
        def client(self):  # type: ignore[no-untyped-def]
            c = real.client.fget(self)  # type: ignore[attr-defined]
            clients.append(c)
            return c

    monkeypatch.setattr(app.agent.memory_bridge.completion, "AnthropicCompletion", Recording)
    assert main(["-C", str(ws), "memory", "flush", "--timeout", "30"]) == 0
    assert spool() == [] and clients
    assert all(c.is_closed() for c in clients)  # type: ignore[attr-defined]
