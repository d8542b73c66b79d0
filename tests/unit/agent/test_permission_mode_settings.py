"""``permission_mode`` in the settings files: a project's shared settings.toml cannot start in
accept-edits before the person trusts it (one line says why; trusted, it is in force, and the
person was shown it with the project's allow rules), its plan applies at once, the personal file
beats the shared one, a bad value is one line; the runtime starts in the mode they give (a flag
beating them), takes a trust given mid-run, and keeps the person's own choice over both and over
a new session."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from app.agent.config.project_trust import ProjectTrust
from app.agent.config.settings import SettingsError, load_settings
from app.agent.permissions.loading import load_permission_rules
from app.agent.permissions.modes import PermissionMode
from app.agent.runtime import Runtime
from app.services.extensions import ExtensionsService

PLAN, ACCEPT, DEFAULT = PermissionMode.PLAN, PermissionMode.ACCEPT_EDITS, PermissionMode.DEFAULT
WAITS = (
    ".PseudoClaude/settings.toml: permission_mode accept-edits came with the repository and waits "
    "for your trust; not in force until then"
)


def _project(ws: Path, text: str, name: str = "settings.toml") -> None:
    folder = ws / ".PseudoClaude"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)


def test_a_projects_accept_edits_waits_for_trust_then_is_in_force(ws: Path, isolated_home: Path) -> None:
    _project(ws, 'permission_mode = "accept-edits"\n')
    rules = load_permission_rules(ws, isolated_home)
    assert rules.mode is None
    assert WAITS in rules.problems  # one line says why
    pending = rules.pending_trust
    assert pending is not None and pending.kind == "permissions"
    assert pending.shown == '.PseudoClaude/settings.toml: permission_mode = "accept-edits"\n'

    ProjectTrust(ws, isolated_home).trust("permissions", pending.digest)
    trusted = load_permission_rules(ws, isolated_home)
    assert (trusted.mode, trusted.mode_source) == (ACCEPT, ".PseudoClaude/settings.toml")
    assert trusted.pending_trust is None and not any("waits" in p for p in trusted.problems)


def test_the_mode_is_trusted_with_the_allow_rules_as_one_text(ws: Path, isolated_home: Path) -> None:
    _project(ws, 'permission_mode = "accept-edits"\n[permissions]\nallow = ["bash(make test)"]\n')
    rules = load_permission_rules(ws, isolated_home)
    assert rules.pending_trust is not None
    assert rules.pending_trust.shown == (
        ".PseudoClaude/settings.toml: allow bash(make test)\n"
        '.PseudoClaude/settings.toml: permission_mode = "accept-edits"\n'
    )
    # Trusting the allow rules alone (before the mode was added) does not trust the mode.
    ProjectTrust(ws, isolated_home).trust("permissions", "sha256:" + "0" * 64)
    assert load_permission_rules(ws, isolated_home).mode is None
    ProjectTrust(ws, isolated_home).trust("permissions", rules.pending_trust.digest)
    trusted = load_permission_rules(ws, isolated_home)
    assert trusted.mode == ACCEPT and [r.rule.text for r in trusted.rules] == ["bash(make test)"]


@pytest.mark.parametrize("mode", [PLAN, DEFAULT])
def test_a_projects_plan_or_default_applies_at_once(
    ws: Path, isolated_home: Path, mode: PermissionMode
) -> None:
    _project(ws, f'permission_mode = "{mode.value}"\n')
    rules = load_permission_rules(ws, isolated_home)
    assert rules.mode == mode and rules.pending_trust is None and rules.problems == ()


def test_the_personal_file_beats_the_shared_one_and_needs_no_trust(ws: Path, isolated_home: Path) -> None:
    _project(ws, 'permission_mode = "plan"\n')
    _project(ws, 'permission_mode = "accept-edits"\n', "settings.local.toml")
    rules = load_permission_rules(ws, isolated_home)
    assert (rules.mode, rules.mode_source) == (ACCEPT, ".PseudoClaude/settings.local.toml")
    assert rules.pending_trust is None


def test_a_personal_file_git_tracks_came_with_the_clone(plain_ws: Path, isolated_home: Path) -> None:
    subprocess.run(["git", "init", "-q", str(plain_ws)], check=True)
    _project(plain_ws, 'permission_mode = "accept-edits"\n', "settings.local.toml")
    subprocess.run(["git", "-C", str(plain_ws), "add", "."], check=True)
    rules = load_permission_rules(plain_ws, isolated_home)
    assert rules.mode is None and rules.pending_trust is not None
    assert any(
        "settings.local.toml: permission_mode accept-edits came with the repository" in p
        for p in rules.problems
    )


@pytest.mark.parametrize("value", ['"yolo"', "true", '["plan"]'])
def test_a_bad_value_in_a_project_file_is_one_line(ws: Path, isolated_home: Path, value: str) -> None:
    _project(ws, f"permission_mode = {value}\n")
    rules = load_permission_rules(ws, isolated_home)
    assert rules.mode is None
    [line] = rules.problems
    assert line.startswith(
        ".PseudoClaude/settings.toml: permission_mode must be one of default, accept-edits, plan"
    )
    assert line.endswith("; ignored") and "\n" not in line


def test_a_bad_value_in_the_user_config_or_the_environment_is_one_line(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text('permission_mode = "acceptEdits"\n')
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert "permission_mode" in str(err.value) and "config.toml" in str(err.value)
    assert "'default', 'accept-edits' or 'plan'" in str(err.value) and "\n" not in str(err.value)
    (isolated_home / "config.toml").unlink()
    monkeypatch.setenv("PSEUDOCLAUDE_PERMISSION_MODE", "yolo")
    with pytest.raises(SettingsError, match="environment variable PSEUDOCLAUDE_PERMISSION_MODE"):
        load_settings()


# -- the runtime ----------------------------------------------------------------------------------


async def _started(ws: Path, home: Path, **flags: object) -> Runtime:
    rt = Runtime(load_settings({"memory_mode": "off", **flags}), ws, home=home)
    await rt.start(worker=False)
    return rt


async def test_the_runtime_starts_in_the_files_mode_and_the_flag_beats_them(
    ws: Path, isolated_home: Path
) -> None:
    _project(ws, 'permission_mode = "plan"\n')
    rt = await _started(ws, isolated_home)
    try:
        assert rt.permission_mode == PLAN and rt.gate.permission_mode == PLAN
    finally:
        await rt.close()
    rt = await _started(ws, isolated_home, permission_mode="accept-edits")
    try:
        assert rt.permission_mode == ACCEPT
    finally:
        await rt.close()


async def test_a_trust_given_mid_run_puts_the_projects_accept_edits_in_force(
    ws: Path, isolated_home: Path
) -> None:
    _project(ws, 'permission_mode = "accept-edits"\n')
    rt = await _started(ws, isolated_home)
    seen: list[PermissionMode] = []
    rt.on_permission_mode = seen.append
    try:
        assert rt.permission_mode == DEFAULT  # untrusted: it starts in default
        service = ExtensionsService(rt)  # the app's trust window answers through it
        [waiting] = service.pending()
        assert 'permission_mode = "accept-edits"' in waiting.shown
        await service.trust()
        assert rt.permission_mode == ACCEPT and seen == [ACCEPT]
    finally:
        await rt.close()


async def test_the_persons_choice_holds_over_the_files_and_a_new_session(
    ws: Path, isolated_home: Path
) -> None:
    _project(ws, 'permission_mode = "plan"\n')
    rt = await _started(ws, isolated_home)
    seen: list[PermissionMode] = []
    rt.on_permission_mode = seen.append
    try:
        rt.set_permission_mode(rt.permission_mode.next())  # Shift+Tab from plan
        assert rt.permission_mode == DEFAULT and seen == [DEFAULT]
        rt.refresh_permission_mode()  # the files read again (a trust): the choice stays
        assert rt.permission_mode == DEFAULT
        await rt.new_session()  # /clear
        assert rt.permission_mode == DEFAULT
        with pytest.raises(ValueError):
            rt.set_permission_mode("yolo")
    finally:
        await rt.close()
