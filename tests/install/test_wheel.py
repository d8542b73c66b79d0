"""The product as a user installs it: a wheel built from the tracked tree, in a fresh venv, run from
a folder where the source tree is not importable.

`pipx install .` and `uv tool install .` build this same wheel and install it into a venv of its own;
only an editable install (`make run`) reads the checkout. So a module or a stylesheet left out of the
wheel breaks every real install while the rest of the suite, run against the checkout, stays green.
The wheel and the venv are made once for this module (a few seconds, no network): the dependencies
come from the test's own environment through a `.pth` path line, which adds only that folder — the
`.pth` files inside it, among them the editable install's hook to this checkout, are not run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memory.constants import Level
from memory.store.stores import MemoryStores
from tests.support.clitools import MEMORY_MODEL, MODEL, ROOT, cli_env, create_op, ops_answer
from tests.support.fakeapi import FakeAnthropic, text
from tests.support.memtools import trust_workspace, write_note
from tests.tui.test_smoke_tmux import HEIGHT, WIDTH, Tmux, open_tmux, quit_app, start_app

# One worker builds the wheel and the venv once for the whole module (`-n 2 --dist loadgroup`).
pytestmark = [pytest.mark.timeout(120), pytest.mark.xdist_group("wheel")]

PACKAGES = ("app", "memory", "widgets")
STYLESHEET = "app/assets/app.tcss"
# app.tcss gives the memory panel 42 columns (its own default is 32) and its left border.
PANEL_WIDTH = 42
PANEL_BORDER = "▏"
# What would let the installed program import the checkout, or run another interpreter's setup.
HOST_VARS = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "VIRTUAL_ENV",
    "__PYVENV_LAUNCHER__",
)


@dataclass(frozen=True)
class Installed:
    tree: Path  # the clean copy the wheel was built from
    files: tuple[str, ...]  # its files, relative to it
    wheel: Path
    venv: Path
    untracked: tuple[str, ...]  # the checkout's modules git does not track: not in the wheel

    @property
    def hint(self) -> str:
        """For a failure's message: a module missing from the wheel may just be waiting for `git add`."""
        return f"\n(untracked, so not in the wheel: {', '.join(self.untracked)})" if self.untracked else ""

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def exe(self) -> Path:
        return self.venv / "bin" / "pseudoclaude"


def _run(
    cmd: list[str | Path], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def copy_tracked_tree(dest: Path) -> tuple[str, ...]:
    """The files git tracks, with their working-tree content (what a fresh clone gets once the
    changes are committed). A tracked file already deleted from the working tree is left out."""
    listed = _run(["git", "-C", ROOT, "ls-files", "-z"]).stdout.split("\0")
    copied = []
    for rel in filter(None, listed):
        src = ROOT / rel
        if not src.is_file():
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)
        copied.append(rel)
    return tuple(copied)


def untracked_modules() -> tuple[str, ...]:
    listed = _run(
        ["git", "-C", ROOT, "ls-files", "-z", "--others", "--exclude-standard", "--", *PACKAGES]
    ).stdout
    return tuple(f for f in listed.split("\0") if f.endswith((".py", ".tcss")))


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in HOST_VARS}
    # pip: no look-up of a newer pip, no user cache or config outside the test's folders.
    return env | {
        "HOME": str(home),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
        "PIP_CONFIG_FILE": os.devnull,
    }


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("packaging")
    tree, out, venv, home = base / "tree", base / "dist", base / "venv", base / "home"
    home.mkdir()
    files = copy_tracked_tree(tree)
    env = _clean_env(home)
    pip = [sys.executable, "-m", "pip"]
    # Without build isolation: the build backend is this environment's setuptools (the test extra).
    _run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-cache-dir", "-q", "-w", out, tree],
        env=env,
        cwd=base,
    )
    [wheel] = out.glob("pseudoclaude-*.whl")
    # No pip inside the new venv (ensurepip would take longer than the rest): this pip installs into it.
    _run([sys.executable, "-m", "venv", "--without-pip", venv], env=env, cwd=base)
    _run(
        [
            *pip,
            "--python",
            venv / "bin" / "python",
            "install",
            "--no-deps",
            "--no-index",
            "--no-cache-dir",
            "-q",
            wheel,
        ],
        env=env,
        cwd=base,
    )
    site = _run(
        [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        env=env,
        cwd=base,
    ).stdout.strip()
    (Path(site) / "pseudoclaude-test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    yield Installed(tree, files, wheel, venv, untracked_modules())


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working folder from which the checkout cannot be imported."""
    d = Path(os.path.realpath(tmp_path / "elsewhere"))
    d.mkdir()
    assert not d.is_relative_to(ROOT.resolve())
    return d


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    w = Path(os.path.realpath(tmp_path / "repo"))
    (w / ".git").mkdir(parents=True)
    return w


def run_env(server: FakeAnthropic | None = None) -> dict[str, str]:
    """The CLI tests' environment (private HOME, the fake API) without a way back to the checkout."""
    return {k: v for k, v in cli_env(server).items() if k not in HOST_VARS}


def run_installed(
    installed: Installed, cwd: Path, *args: str, server: FakeAnthropic | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(installed.exe), *args],
        cwd=cwd,
        env=run_env(server),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def project_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def test_the_wheel_holds_every_package_and_the_stylesheet_and_nothing_of_tests(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    ours = [f for f in installed.files if f.split("/")[0] in PACKAGES]
    packages = [f for f in ours if f.endswith("/__init__.py")]
    assert len(packages) > len(PACKAGES)  # the sub-packages are there to be checked
    assert sorted(set(packages) - names) == []
    assert sorted({f for f in ours if f.endswith((".py", ".tcss"))} - names) == []
    assert STYLESHEET in names
    # Nothing else: no tests/, no assets/ or build leftovers beside the packages and their metadata.
    assert {n.split("/")[0] for n in names} == {*PACKAGES, f"pseudoclaude-{project_version()}.dist-info"}


def test_the_venv_imports_the_installed_packages_not_the_checkout(
    installed: Installed, outside: Path
) -> None:
    code = (
        "import app, memory, widgets, app.tui.app; "
        "print('\\n'.join(m.__file__ for m in (app, memory, widgets)))"
    )
    proc = subprocess.run(
        [str(installed.python), "-c", code],
        cwd=outside,
        env=run_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr + installed.hint
    for file in proc.stdout.split():
        assert Path(file).is_relative_to(installed.venv) and not Path(file).is_relative_to(ROOT), file


def test_version_prints_the_project_version_without_loading_the_sdk_or_textual(
    installed: Installed, outside: Path
) -> None:
    proc = run_installed(installed, outside, "--version")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"pseudoclaude {project_version()}\n", ""), (
        installed.hint
    )
    code = (
        "import sys\nfrom app.cli.main import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'anthropic', 'textual', 'pydantic'}))"
    )
    proc = subprocess.run(
        [str(installed.python), "-c", code],
        cwd=outside,
        env=run_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "[]", (
        proc.stdout + proc.stderr + installed.hint
    )


def test_memory_list_shows_a_card(installed: Installed, outside: Path, workspace: Path) -> None:
    trust_workspace(workspace)
    write_note(
        MemoryStores(workspace),
        Level.PROJECT,
        "project_knowledge_build.md",
        "Build with make",
        "Run `make build`.",
        summary="make build builds it",
    )
    proc = run_installed(installed, outside, "-C", str(workspace), "memory", "list")
    assert proc.returncode == 0, proc.stderr + installed.hint
    assert (
        "project_knowledge_build.md  [project_knowledge] Build with make — make build builds it"
        in proc.stdout
    )


def test_print_mode_answers_from_the_fake_api_and_its_memory_job_writes_the_card(
    installed: Installed, outside: Path, workspace: Path, server: FakeAnthropic
) -> None:
    server.script(MODEL, text("Use make build."))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Build with make", "Run `make build`."))))
    proc = run_installed(
        installed,
        outside,
        "-C",
        str(workspace),
        "-p",
        "How do I build?",
        "--memory-wait",
        "30",
        server=server,
    )
    assert (proc.returncode, proc.stdout) == (0, "Use make build.\n"), proc.stderr + installed.hint
    cards = [p.name for p in (workspace / ".PseudoClaude" / "memory").glob("*.md") if p.name != "MEMORY.md"]
    assert cards == ["project_knowledge_build-with-make.md"], proc.stderr
    assert server.unscripted() == []


def test_the_first_frame_in_a_terminal_is_laid_out_by_the_shipped_stylesheet(
    installed: Installed, outside: Path, workspace: Path, server: FakeAnthropic
) -> None:
    tmux = open_tmux(outside)
    try:
        try:
            screen = start_app(tmux, server, workspace, exe=installed.exe, cwd=outside, env=run_env(server))
        except pytest.fail.Exception as e:
            pytest.fail(f"{e.msg}{installed.hint}")
        assert "Traceback" not in screen and "Error:" not in screen, screen + installed.hint
        _assert_panel_laid_out_by_the_stylesheet(tmux, screen)
        quit_app(tmux)
    finally:
        tmux.kill()


def _assert_panel_laid_out_by_the_stylesheet(tmux: Tmux, screen: str) -> None:
    # Every row above the status line: chat on the left, the panel's border PANEL_WIDTH from the right.
    rows = screen.split("\n")[: HEIGHT - 1]
    column = WIDTH - PANEL_WIDTH
    off = [i for i, row in enumerate(rows) if row.ljust(WIDTH)[column] != PANEL_BORDER]
    assert len(rows) == HEIGHT - 1 and off == [], (
        f"panel border not at column {column} in rows {off}:\n{screen}"
    )
    assert "Memory" in rows[0][column:]


def test_the_version_is_unknown_where_no_metadata_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    from app.cli.main import package_version

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    assert package_version() == project_version()  # the editable install's metadata
    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert package_version() == "unknown"


def test_the_apps_worker_child_runs_from_the_wheel_and_writes_the_card(
    installed: Installed, outside: Path, workspace: Path, server: FakeAnthropic
) -> None:
    # The argv the app starts its memory worker with (app/agent/memory_bridge/worker_process.worker_argv),
    # from the installed interpreter: -P, so the folder it runs in can never shadow the package.
    from app.agent.memory_bridge.worker_process import worker_argv
    from memory.constants import MemoryMode
    from memory.jobs.spool import Spool, make_job
    from memory.model import Turn, TurnMessage

    stores = MemoryStores(workspace)
    job = make_job(workspace, [Turn(messages=[TurnMessage(role="user", text="we lint with ruff")])])
    Spool(stores.paths).submit(job)
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Lint with ruff", "Run `ruff check`."))))
    argv = [str(installed.python), *worker_argv(workspace, MEMORY_MODEL, MemoryMode.AUTO, drain=30)[1:]]
    proc = subprocess.run(
        argv,
        cwd=outside,
        env=run_env(server),
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr + installed.hint
    cards = [p.name for p in (workspace / ".PseudoClaude" / "memory").glob("*.md") if p.name != "MEMORY.md"]
    assert cards == ["project_knowledge_lint-with-ruff.md"]
