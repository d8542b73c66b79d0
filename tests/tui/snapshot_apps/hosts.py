"""Small host apps that put one widget of the full-screen app into a fixed, deterministic state.

Each host loads the project's stylesheets (assets/*.tcss) so a snapshot shows the widget as the
App draws it. Nothing here reads a clock, a path of the machine, or the network.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical

from widgets.chat.log import ChatPane
from widgets.dialogs.permission import PermissionModal, PermissionRequest
from widgets.panel.memory_panel import MemoryPanel, PanelCard, PanelJob, PanelState

ASSETS = Path(__file__).resolve().parents[3] / "assets"
# Only the widgets' own sheet: app.tcss lays out the App's screen (ids these hosts do not have).
WIDGET_CSS = [p for p in (ASSETS / "widgets.tcss",) if p.exists()]
APP_CSS = [p for p in (ASSETS / "widgets.tcss", ASSETS / "app.tcss") if p.exists()]


class Host(App[None]):
    """A bare app with the widget stylesheets and no bindings of its own."""

    CSS_PATH: ClassVar = WIDGET_CSS  # type: ignore[misc]
    BINDINGS: ClassVar[list[BindingType]] = []


# -- chat ------------------------------------------------------------------------------------------

QUESTION = "How do I read a TOML config file in Python?"

ANSWER = """\
Python 3.11 ships **`tomllib`** in the standard library, so no dependency is needed:

```python
import tomllib
from pathlib import Path

def load_config(path: Path) -> dict:
    with path.open("rb") as f:  # tomllib wants bytes
        return tomllib.load(f)
```

- `tomllib` only *reads*; use `tomli-w` to write.
- Errors raise `tomllib.TOMLDecodeError` with the line and column.
"""


def fragments(text: str, size: int = 7) -> list[str]:
    """The answer cut the way a stream delivers it: small pieces that split words and fences."""
    return [text[i : i + size] for i in range(0, len(text), size)]


class ChatHost(Host):
    def compose(self) -> ComposeResult:
        yield ChatPane()

    async def stream_answer(self) -> None:
        pane = self.query_one(ChatPane)
        pane.add_user(QUESTION)
        answer = pane.start_answer()
        for piece in fragments(ANSWER):
            await answer.append(piece)
        await answer.finish()


READ_RESULT = "\n".join(f"{n:>3}  line {n} of settings.py" for n in range(1, 9))
# The display keys the tool specs give these tools (the telling inputs, with their formats).
PATH_KEYS = (("path", "{}"),)
GREP_KEYS = (("pattern", "{}"), ("path", "in {}"), ("glob", "files {}"))
LIST_KEYS = (("pattern", "{}"), ("path", "in {}"))


class ToolHost(ChatHost):
    """Every tool status at once, one result expanded, and a sub-agent's calls under its task."""

    async def fill_tools(self) -> None:
        pane = self.query_one(ChatPane)
        pane.add_user("Rename the setting and run the tests.")
        answer = pane.start_answer()
        await answer.append("I'll look at the settings first.")
        await answer.finish()

        read = pane.add_tool("toolu_1", "read_file", display_keys=PATH_KEYS)
        read.set_running({"path": "app/settings.py"})
        read.set_result(READ_RESULT, is_error=False, denied=False)
        read.toggle()  # expanded, without the focus highlight a key press would add

        edit = pane.add_tool("toolu_2", "edit_file", display_keys=PATH_KEYS)
        edit.set_running({"path": "app/settings.py", "old_string": "timeout", "new_string": "bash_timeout"})
        edit.set_result("old text not found in app/settings.py", is_error=True, denied=False)

        write = pane.add_tool("toolu_3", "write_file", display_keys=PATH_KEYS)
        write.set_running({"path": "NOTES.md", "content": "# notes\n"})
        write.set_result("the user denied this tool call", is_error=True, denied=True)

        task = pane.add_tool("toolu_4", "task", display_keys=(("description", "{}"),))
        task.set_running({"description": "find every use of the setting"})
        grep = task.add_child("toolu_5", "grep", display_keys=GREP_KEYS)
        grep.set_running({"pattern": "bash_timeout", "path": "."})
        grep.set_result("app/settings.py:91\napp/tools/bash.py:40", is_error=False, denied=False)
        listing = task.add_child("toolu_6", "list_files", display_keys=LIST_KEYS)
        listing.set_streaming(48)

        bash = pane.add_tool("toolu_7", "bash", display_keys=(("command", "{}"),))
        bash.set_running({"command": "make test"})


# -- modals ----------------------------------------------------------------------------------------

DIFF = """\
--- a/app/settings.py
+++ b/app/settings.py
@@ -88,7 +88,7 @@ class Settings(BaseSettings):
     max_iterations: int = Field(default=50, ge=1)
     memory_wait: float = Field(default=15.0, ge=0, allow_inf_nan=False)
     max_tokens: int = Field(default=16000, gt=0)  # per main-model response
-    timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)
+    bash_timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)

     _warnings: list[str] = PrivateAttr(default_factory=list)
"""

EDIT_REQUEST = PermissionRequest(
    call_id="toolu_2",
    name="edit_file",
    summary="edit app/settings.py (1 line changed)",
    preview=DIFF,
    preview_kind="diff",
)
BASH_REQUEST = PermissionRequest(
    call_id="toolu_7",
    name="bash",
    summary="run a command in the workspace",
    preview="make test && git diff --stat",
    preview_kind="command",
)


class PermissionHost(ChatHost):
    """The permission modal over a chat that has just asked for a tool."""

    def __init__(self, request: PermissionRequest) -> None:
        super().__init__()
        self.request = request

    async def ask(self) -> None:
        pane = self.query_one(ChatPane)
        pane.add_user("Rename the setting and run the tests.")
        args = (
            {"command": self.request.preview} if self.request.name == "bash" else {"path": "app/settings.py"}
        )
        pane.add_tool(self.request.call_id, self.request.name).set_running(args)
        self.push_screen(PermissionModal(self.request))


# -- memory panel ----------------------------------------------------------------------------------

PANEL_STATE = PanelState(
    project=(
        PanelCard(
            "project_knowledge",
            "Build with make",
            "make build builds; make test runs the suite",
            "project_knowledge_build.md",
        ),
        PanelCard(
            "reference_material",
            "API docs live in docs/api",
            "the OpenAPI file is docs/api/openapi.yaml",
            "reference_material_api_docs.md",
            new=True,
        ),
    ),
    user=(
        PanelCard(
            "user_preference",
            "Prefers short answers",
            "answer briefly, code first, no preamble",
            "user_preference_short.md",
        ),
        PanelCard(
            "correction_feedback",
            "No mocks in integration tests",
            "integration tests use the fake server, never mocks of the SDK; unit tests may stub I/O",
            "correction_feedback_no_mocks.md",
            new=True,
        ),
    ),
    cut_note=None,
    project_note="untrusted — not used until you trust it",
    jobs=(
        PanelJob("job-1", "extracting"),
        PanelJob("job-2", "retrying 2/3 in 4s"),
        PanelJob("job-3", "failed: the memory model answered without JSON", failed=True),
    ),
)


class PanelHost(Host):
    """The App's layout (its stylesheet, its ids) with only the chat column and the panel."""

    CSS_PATH: ClassVar = APP_CSS  # type: ignore[misc]

    def __init__(self, state: PanelState) -> None:
        super().__init__()
        self.state = state

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield ChatPane(id="chat")
            yield MemoryPanel(id="panel")

    def on_mount(self) -> None:
        self.query_one(MemoryPanel).show(self.state)
