"""Print mode's rendering of Runner events: stdout carries only the answer, stderr the rest."""

from __future__ import annotations

import io

from app.agent.model.provider import Retrying, TextDelta, Usage, UsageEvent
from app.agent.tools import ToolResult
from app.agent.turn.events import MemorySubmitted, RunStop, ToolCallFinished, ToolCallStarted
from app.cli.print_mode import PrintUI


def render(*events: object) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    ui = PrintUI(out, err)
    for ev in events:
        ui(ev)  # type: ignore[arg-type]
    return out.getvalue(), err.getvalue()


def test_text_after_tool_calls_starts_a_new_paragraph() -> None:
    out, err = render(
        TextDelta("Let me check."),
        ToolCallStarted("t1", "read_file", {"path": "README.md"}),
        ToolCallFinished("t1", "read_file", ToolResult(content="1\t# Demo")),
        TextDelta("It is built"),
        TextDelta(" with make."),
        RunStop("completed", usage=Usage(1, 2, 3, 4)),
    )
    assert out == "Let me check.\n\nIt is built with make.\n"
    assert '⏺ read_file({"path": "README.md"})' in err and "⎿ ok: 1 # Demo" in err
    assert "[done; usage: 1 in, 2 out, 3 cache read, 4 cache write]" in err


def test_denied_and_error_results_are_tagged_once() -> None:
    _, err = render(
        ToolCallStarted("t1", "bash", {"command": "ls"}),
        ToolCallFinished(
            "t1", "bash", ToolResult(content="bash was denied: nope", is_error=True), denied=True
        ),
    )
    assert "⎿ denied: bash was denied: nope" in err and "denied: denied" not in err


def test_retry_voids_partial_answer_on_stderr_and_fresh_line_on_stdout() -> None:
    out, err = render(
        TextDelta("half"), Retrying("stream failed", 1, 0.5), TextDelta("whole"), RunStop("completed")
    )
    assert out == "half\nwhole\n"
    assert "[retrying in 0.5s: stream failed; the partial answer above is void]" in err


def test_failed_run_reports_one_line_on_stderr() -> None:
    out, err = render(RunStop("error", "the API refused the request (400): bad"))
    assert out == "" and err == "pseudoclaude: the API refused the request (400): bad\n"


def test_print_mode_strips_terminal_escapes_from_answer_tool_lines_and_diagnostics() -> None:
    osc52 = "\x1b]52;c;ZXZpbA==\x07"
    out, err = render(
        TextDelta(f"safe {osc52}answer\x1b[31m red\x1b[0m"),
        ToolCallStarted("t1", "bash", {"command": f"echo {osc52}"}),
        ToolCallFinished("t1", "bash", ToolResult(content="\x1b]0;pwned title\x07out\x1b[2J")),
        Retrying(f"stream failed {osc52}", 1, 0.5),
        RunStop("error", "boom \x1b[31mred\x1b[0m"),
    )
    assert "\x1b" not in out and "\x07" not in out and "\x1b" not in err and "\x07" not in err
    assert "[31m" not in out + err and "52;c" not in out + err and "pwned title" not in err
    assert out.startswith("safe answer red") and "⎿ ok: out" in err and "pseudoclaude: boom red" in err


def test_redacts_credentials_in_urls_in_diagnostics() -> None:
    _, err = render(RunStop("error", "cannot connect to http://alice:hunter2pass@proxy.example:8080/v1"))
    assert "hunter2pass" not in err and "proxy.example" in err


class _ClosedPipe(io.StringIO):
    def write(self, s: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_closed_stdout_stops_printing_quietly_and_the_rest_goes_on() -> None:
    err = io.StringIO()
    ui = PrintUI(_ClosedPipe(), err)
    ui(TextDelta("answer that nobody reads"))
    ui(TextDelta(" and more"))
    ui(RunStop("completed", usage=Usage(1, 2, 3, 4)))
    assert ui.out_closed and "[done;" in err.getvalue() and "Broken" not in err.getvalue()


def test_sub_agent_text_never_reaches_stdout() -> None:
    out, err = render(
        ToolCallStarted("t1", "task", {"prompt": "look"}),
        TextDelta("sub-agent musings", depth=1),
        ToolCallStarted("t2", "grep", {"pattern": "x"}, depth=1),
        ToolCallFinished("t1", "task", ToolResult(content="report")),
        TextDelta("The answer."),
        RunStop("completed"),
    )
    assert out == "The answer.\n" and "    ⏺ grep" in err


def test_a_job_coalesced_into_another_job_reports_which_job_took_it_over() -> None:
    from memory.events import JobApplied, JobTakenOver

    out, err = io.StringIO(), io.StringIO()
    ui = PrintUI(out, err)
    ui(MemorySubmitted("j-mine"))
    ui.memory(JobTakenOver(job_id="j-someone-elses", successor="j-other"))  # noted, not said
    ui.memory(JobTakenOver(job_id="j-mine", successor="j-theirs"))
    ui.memory(JobApplied(job_id="j-theirs"))
    lines = err.getvalue().splitlines()
    assert lines[0] == "[memory: job j-mine spooled]"
    assert lines[1] == "[memory: job j-mine was taken over by job j-theirs]"
    assert lines[2].startswith("[memory: job j-theirs (it took over job j-mine) applied:")
    assert len(lines) == 3 and out.getvalue() == ""


def test_a_job_taken_over_and_run_by_another_process_is_reported_once_after_the_wait() -> None:
    from app.cli.print_mode import _report_outcome
    from memory.jobs.views import JobOutcome

    err = io.StringIO()
    ui = PrintUI(io.StringIO(), err)
    _report_outcome(ui, "j-mine", JobOutcome(job_id="j-mine", status="done", taken_over_by="j-theirs"), 15)
    assert (
        err.getvalue()
        == "[memory: job j-mine was taken over by job j-theirs, which another process ran: applied]\n"
    )
    # Still running elsewhere: said so, with the job that has it.
    err.seek(0), err.truncate()
    _report_outcome(ui, "j-mine", JobOutcome(job_id="j-mine", status="pending", taken_over_by="j-theirs"), 2)
    assert "job j-mine (it was taken over by job j-theirs) still running after 2s" in err.getvalue()
    # An outcome this process printed from an event is not repeated.
    err.seek(0), err.truncate()
    from memory.events import JobFailed

    ui.memory(JobFailed(job_id="j-2", reason="boom"))
    _report_outcome(ui, "j-2", JobOutcome(job_id="j-2", status="failed", reason="boom"), 15)
    assert err.getvalue().count("boom") == 1


def test_an_escape_sequence_split_between_deltas_leaves_no_fragment_on_stdout() -> None:
    out, _ = render(
        TextDelta("copied \x1b"),
        TextDelta("]52;c;aGFja2Vk"),
        TextDelta("\x07 and \x1b"),
        TextDelta("[5mblink\x1b"),
        TextDelta("[0m done"),
        RunStop("completed"),
    )
    assert out == "copied  and blink done\n"


def test_each_response_is_stripped_as_its_own_stream() -> None:
    # A response ending in an open sequence ends it there: the next response's text shows.
    out, _ = render(
        TextDelta("first\x1b[3"),
        UsageEvent(Usage(1, 1)),
        ToolCallStarted("t1", "read_file", {"path": "a"}),
        ToolCallFinished("t1", "read_file", ToolResult(content="x")),
        TextDelta("1m second"),
        RunStop("completed"),
    )
    assert out == "first\n\n1m second\n"


def test_a_line_break_split_between_deltas_is_one_line_break() -> None:
    out, _ = render(TextDelta("one\r"), TextDelta("\ntwo\r"), RunStop("completed"))
    assert out == "one\ntwo\n"
