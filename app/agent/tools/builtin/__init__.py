"""The built-in tools, one module each, in the order the model is offered them (a contract: the
request's tool list stays the same bytes). Adding a built-in tool is its module and one line here."""

from __future__ import annotations

from app.agent.tools.builtin.bash import Bash
from app.agent.tools.builtin.edit_file import EditFile
from app.agent.tools.builtin.exit_plan_mode import ExitPlanMode
from app.agent.tools.builtin.grep import Grep
from app.agent.tools.builtin.list_files import ListFiles
from app.agent.tools.builtin.read_file import ReadFile
from app.agent.tools.builtin.read_memory import ReadMemory
from app.agent.tools.builtin.read_result import ReadResult
from app.agent.tools.builtin.search_memory import SearchMemory
from app.agent.tools.builtin.task import Task
from app.agent.tools.builtin.todo_write import TodoWrite
from app.agent.tools.builtin.web_fetch import WebFetch
from app.agent.tools.builtin.web_search import WebSearch
from app.agent.tools.builtin.write_file import WriteFile
from app.agent.tools.tool import AnyTool

__all__ = ["builtins"]


def builtins() -> list[AnyTool]:
    return [
        ReadFile(),
        ListFiles(),
        Grep(),
        WriteFile(),
        EditFile(),
        Bash(),
        ReadMemory(),
        SearchMemory(),
        ReadResult(),
        Task(),
        WebFetch(),
        WebSearch(),
        ExitPlanMode(),
        TodoWrite(),
    ]
