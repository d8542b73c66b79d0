"""`memory list --stale / --unused DAYS`, `memory confirm`, `memory show` of a cited card, dropped
citations in `memory apply`, and `memory doctor` on stale cards, in process, in a
workspace that is no git repository (content ids are ``sha256:``)."""

from __future__ import annotations

import datetime as _dt
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from app.cli.main import main
from memory.grounding.usage import UsageLog
from memory.jobs.doctor import diagnose
from memory.model import rfc3339, utcnow
from memory.store.paths import pseudoclaude_home
from memory.store.stores import MemoryStores

pytestmark = pytest.mark.plain_ws


@pytest.fixture
def cli(plain_ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
        code = main(["memory", *args, "-C", str(plain_ws)])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def op(title: str, level: str = "project", cites: list[Any] | None = None, **kw: Any) -> dict[str, Any]:
    type_ = "project_knowledge" if level == "project" else "user_preference"
    d = {"action": "create", "level": level, "type": type_, "title": title, "content": f"{title} body", **kw}
    if cites is not None:
        d["cites"] = cites
    return d


def apply(cli, *ops: dict[str, Any]) -> str:
    code, _, err = cli("apply", "-", stdin=json.dumps(list(ops)))
    assert code == 0, err
    return err


def card(ws: Path, name: str, level: str = "project") -> Path:
    folder = ws / ".PseudoClaude" / "memory" if level == "project" else pseudoclaude_home() / "memory"
    return folder / name


def set_created(path: Path, when: _dt.datetime) -> None:
    """A card written by hand (or long ago): its ``created`` stamp set in the front matter."""
    text = path.read_text()
    path.write_text(re.sub(r"(?m)^created: .*$", f"created: '{rfc3339(when)}'", text, count=1))


# -- list --unused DAYS ----------------------------------------------------------------------------


def test_unused_lists_the_cards_not_read_in_that_many_days_with_their_use(cli, plain_ws: Path) -> None:
    apply(cli, op("Fresh"), op("Old"), op("Long read"), op("Read now", "user"))
    now = utcnow()
    set_created(card(plain_ws, "project_knowledge_old.md"), now - _dt.timedelta(days=100))
    set_created(card(plain_ws, "project_knowledge_long-read.md"), now - _dt.timedelta(days=100))
    stores = MemoryStores(plain_ws)
    UsageLog(pseudoclaude_home()).record_read(
        stores.project.dir, "project_knowledge_long-read.md", now - _dt.timedelta(days=40, hours=1)
    )
    stores.record_read("user", "user_preference_read-now.md")

    code, out, err = cli("list", "--unused", "1")
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "project  project_knowledge_long-read.md  Long read — read 1× · last 40 days ago",
        "project  project_knowledge_old.md  Old — never read",
    ]
    code, out, _ = cli("list", "--unused", "50")
    assert code == 0 and out == "project  project_knowledge_old.md  Old — never read\n"
    code, out, _ = cli("list", "--unused", "0")
    assert code == 0 and "project  project_knowledge_fresh.md  Fresh — never read\n" in out
    code, out, err = cli("list", "--unused", "200")
    assert (code, out, err) == (0, "", "pseudoclaude: no cards unused in the last 200 days\n")


@pytest.mark.parametrize("days", ["x", "-1", "1.5", "", "+3", "²", "3_0", "99999999999999999999"])
def test_unused_days_must_be_a_whole_number_of_days(cli, plain_ws: Path, capsys, days: str) -> None:
    with pytest.raises(SystemExit) as e:
        main(["memory", "list", "--unused", days, "-C", str(plain_ws)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --unused: DAYS is" in err


# -- list --stale and the plain list ---------------------------------------------------------------


def test_stale_lists_only_stale_cards_and_combines_with_unused(cli, plain_ws: Path) -> None:
    (plain_ws / "notes.txt").write_text("v1\n")
    (plain_ws / "other.txt").write_text("stays\n")
    apply(cli, op("Notes", cites=["notes.txt"]), op("Other", cites=["other.txt"]), op("Uncited"))
    code, out, err = cli("list", "--stale")
    assert (code, out, err) == (0, "", "pseudoclaude: no stale cards\n")
    (plain_ws / "notes.txt").write_text("v2\n")
    code, out, _ = cli("list", "--stale")
    assert (
        code == 0
        and out
        == "project  project_knowledge_notes.md  Notes — notes.txt changed since this card was written\n"
    )
    code, out, err = cli("list", "--stale", "--unused", "1")
    assert (code, out, err) == (0, "", "pseudoclaude: no stale cards unused in the last 1 day\n")
    code, out, _ = cli("list", "--stale", "--unused", "0")
    assert out == (
        "project  project_knowledge_notes.md  Notes — notes.txt changed since this card was written"
        " · never read\n"
    )

    code, out, _ = cli("list")
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  ")}
    assert lines["project_knowledge_notes.md"].endswith(
        "  stale: notes.txt changed since this card was written"
    )
    assert (
        "stale" not in lines["project_knowledge_other.md"]
        and "stale" not in lines["project_knowledge_uncited.md"]
    )


def test_plain_list_still_lists_when_the_stale_check_cannot_run(cli, plain_ws: Path, monkeypatch) -> None:
    from memory.store.transaction import TransactionError

    apply(cli, op("Notes"))

    def locked(self: MemoryStores) -> dict[str, Any]:
        raise TransactionError("memory stores are locked by another process (x.lock)")

    monkeypatch.setattr(MemoryStores, "staleness", locked)
    code, out, err = cli("list")
    assert code == 0 and "project_knowledge_notes.md  [project_knowledge] Notes" in out
    assert (
        err == "pseudoclaude: stale cards not checked: memory stores are locked by another process (x.lock)\n"
    )
    code, out, err = cli("list", "--stale")
    assert code == 1 and out == "" and err.count("\n") == 1 and "locked by another process" in err


# -- show ------------------------------------------------------------------------------------------


def test_show_prints_the_citations_checked_now_above_a_cited_card(cli, plain_ws: Path) -> None:
    (plain_ws / "notes.txt").write_text("a\nb\nc\n")
    apply(cli, op("Notes", cites=["notes.txt:2-3"]))
    path = card(plain_ws, "project_knowledge_notes.md")
    code, out, _ = cli("show", "project", "project_knowledge_notes.md")
    assert code == 0
    assert (
        out
        == "Cites (checked now):\n- notes.txt:2-3: unchanged since the card was written\n\n"
        + path.read_text()
    )
    (plain_ws / "notes.txt").unlink()
    code, out, _ = cli("show", "project", "project_knowledge_notes.md")
    assert out.startswith("Cites (checked now):\n- notes.txt:2-3: notes.txt was deleted\nThis card is STALE")


# -- confirm ---------------------------------------------------------------------------------------


def test_confirm_refreshes_the_ids_and_undo_reverts_it(cli, plain_ws: Path) -> None:
    (plain_ws / "notes.txt").write_text("v1\n")
    apply(cli, op("Notes", cites=["notes.txt"]))
    path = card(plain_ws, "project_knowledge_notes.md")
    before = path.read_bytes()
    (plain_ws / "notes.txt").write_text("v2\n")
    code, out, err = cli("confirm", "project", "project_knowledge_notes.md")
    assert (code, out, err) == (0, "confirmed project/project_knowledge_notes.md\n", "")
    assert cli("list", "--stale")[1] == "" and path.read_bytes() != before
    code, out, _ = cli("undo")
    assert code == 0 and out == "reverted project/project_knowledge_notes.md\n"
    assert path.read_bytes() == before


def test_confirm_of_a_card_that_cannot_be_confirmed_says_why_in_one_line(cli, plain_ws: Path, capsys) -> None:
    apply(cli, op("Good"), op("Pref", "user"))
    bad = card(plain_ws, "project_knowledge_bad.md")
    bad.write_text("---\ntitle: [unclosed\n---\nbody\n")
    kept = bad.read_bytes()
    for args, want in [
        (("project", "nope.md"), "no note named 'nope.md'"),
        (("project", "../x.md"), "x.md"),
        (("project", "project_knowledge_bad.md"), "does not parse"),
    ]:
        code, out, err = cli("confirm", *args)
        assert code == 1 and out == "" and err.count("\n") == 1 and err.startswith("pseudoclaude: "), (
            args,
            err,
        )
        assert want in err, (args, err)
    assert bad.read_bytes() == kept
    with pytest.raises(SystemExit) as e:
        main(["memory", "confirm", "team", "x.md", "-C", str(plain_ws)])
    assert e.value.code == 2 and capsys.readouterr().err.count("\n") == 1
    # A card without citations can be confirmed too (it records the person's "still true").
    code, out, _ = cli("confirm", "user", "user_preference_pref.md")
    assert code == 0 and out == "confirmed user/user_preference_pref.md\n"


# -- apply: dropped citations ----------------------------------------------------------------------


def test_apply_says_each_dropped_citation_in_op_order_and_they_do_not_change_the_exit(
    cli, plain_ws: Path
) -> None:
    (plain_ws / "ok.txt").write_text("ok\n")
    code, out, err = cli(
        "apply",
        "-",
        stdin=json.dumps(
            [op("A", cites=["ok.txt", "../a"]), {"action": "nope"}, op("C", cites=["/etc/hosts"])]
        ),
    )
    assert code == 3  # op 1 was rejected; the dropped citations alone would be exit 0
    assert out.splitlines() == [
        "create project/project_knowledge_a.md",
        "create project/project_knowledge_c.md",
    ]
    lines = err.splitlines()
    assert len(lines) == 3
    assert lines[0] == "pseudoclaude: op 0: citation '../a' dropped: '../a' leaves the workspace through '..'"
    assert lines[1].startswith("pseudoclaude: op 1: ")
    assert lines[2].startswith(
        "pseudoclaude: op 2: citation '/etc/hosts' dropped: '/etc/hosts' is an absolute path"
    )
    err = apply(cli, op("User", "user", cites=["ok.txt"]))
    assert err.startswith("pseudoclaude: op 0: citation 'ok.txt' dropped: ") and err.count("\n") == 1


# -- doctor ----------------------------------------------------------------------------------------


def test_doctor_reports_stale_cards_as_information_only(cli, plain_ws: Path) -> None:
    (plain_ws / "notes.txt").write_text("v1\n")
    apply(cli, op("Notes", cites=["notes.txt"]))
    (plain_ws / "notes.txt").write_text("v2\n")
    report = diagnose(MemoryStores(plain_ws))
    assert report.ok and report.stale == [
        ("project_knowledge_notes.md", "notes.txt changed since this card was written")
    ]
    code, out, _ = cli("doctor")
    assert (
        code == 0
        and "stale: project/project_knowledge_notes.md: notes.txt changed since this card was written" in out
    )
    # With a real problem too: the problem fails the check, the stale card is still only said.
    (card(plain_ws, "project_knowledge_notes.md").parent / "MEMORY.md").write_text("garbage\n")
    (card(plain_ws, "project_knowledge_notes.md").parent / "project_knowledge_bad.md").write_text(
        "---\nx: [\n---\n"
    )
    code, out, _ = cli("doctor")
    assert (
        code == 1 and "problem: project store: project_knowledge_bad.md" in out and "stale: project/" in out
    )


# -- help ------------------------------------------------------------------------------------------


def test_help_names_the_new_options_and_command(capsys) -> None:
    for args in (["memory", "list", "--help"], ["memory", "confirm", "--help"], ["memory", "--help"]):
        with pytest.raises(SystemExit):
            main(args)
    out = capsys.readouterr().out
    assert "--stale" in out and "--unused DAYS" in out
    assert "usage: pseudoclaude memory confirm" in out and "say a card still holds" in out
    assert "    confirm " in out


# -- print mode: the memory job's report -------------------------------------------------------


def test_print_mode_says_each_dropped_citation_of_the_applied_job(capsys) -> None:
    from app.cli.print_mode import PrintUI
    from memory.events import JobApplied
    from memory.model import DroppedCite

    out, err = io.StringIO(), io.StringIO()
    ui = PrintUI(out, err)
    dropped = (
        DroppedCite(index=0, cite="../outside", reason="'../outside' leaves the workspace through '..'"),
        DroppedCite(index=2, cite="\x1b]0;t\x07.git/config", reason="inside .git/\nsecond line"),
    )
    ui.memory(JobApplied(job_id="j1", dropped_cites=dropped))
    assert out.getvalue() == ""
    assert err.getvalue().splitlines() == [
        "[memory: job j1 applied: 0 op(s), 0 rejected, 0 conflict(s)]",
        "[memory: job j1: op 0: citation '../outside' dropped: "
        "'../outside' leaves the workspace through '..']",
        "[memory: job j1: op 2: citation '.git/config' dropped: inside .git/ second line]",
    ]
