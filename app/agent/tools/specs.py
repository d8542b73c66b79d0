"""The tool contract: names, inputs, kinds and descriptions written for the model, and which
inputs tell a call apart on screen."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, ValidationInfo, model_validator
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

from app.agent.tools.base import (
    ToolInput,
    filled_text,
    flag,
    integer,
    positive_number,
    quote,
    refuse,
    text,
)

ToolKind = Literal["read", "write", "execute", "agent"]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input: type[ToolInput]
    kind: ToolKind
    # The telling inputs of a call, in order, each with how it reads on one line ("in {}").
    display: tuple[tuple[str, str], ...] = ()

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of ``input`` as the model is given it (shared: copy before changing)."""
        return input_schema(self.input)


# -- the inputs ----------------------------------------------------------------------------------

_PATH_NOTE = "relative to the workspace root (an absolute path must be inside the workspace)"
_LEVELS = ("project", "user")
# memory.search.engine.SEARCH_LIMIT_MAX: the engine would cut a larger one silently.
SEARCH_MEMORY_MAX_LIMIT = 50

Text = Annotated[str, BeforeValidator(text)]
FilledText = Annotated[str, BeforeValidator(filled_text)]
Flag = Annotated[bool, BeforeValidator(flag)]
PositiveNumber = Annotated[float, BeforeValidator(positive_number)]
# A bound sits on the int, before the type check wraps it, so the schema shows it as minimum/maximum.
Count = Annotated[int, Field(ge=1), BeforeValidator(integer)]
# A 1-based line: the schema asks for 1 or more, but 0 is taken as the first line rather than
# refused (models count from 0 now and then).
Line = Annotated[int, Field(ge=0, json_schema_extra={"minimum": 1}), BeforeValidator(integer)]


def _unknown_level(level: str) -> ValueError:
    return refuse(f"level must be 'project' or 'user', not {quote(level)}")


def _level(value: object, info: ValidationInfo) -> str:
    v = text(value, info)
    if v not in _LEVELS:
        raise _unknown_level(v)
    return v


Level = Annotated[Literal["project", "user"], BeforeValidator(_level)]


def _command(value: str) -> str:
    if "\x00" in value:
        raise refuse("command contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise refuse("command is not valid UTF-8 text (it holds a lone surrogate)") from None
    return value


def _topic(value: str) -> str:
    if not value.strip():
        raise refuse("input 'query' must name what to look for, not only spaces")
    return value


class ReadFileInput(ToolInput):
    path: FilledText = Field(description=f"The file to read, {_PATH_NOTE}.")
    offset: Line | None = Field(None, description="First line to read, 1-based (default 1).")
    limit: Count | None = Field(None, description="How many lines to read (default 2000).")


class ListFilesInput(ToolInput):
    path: Text | None = Field(None, description=f"The folder to list, {_PATH_NOTE} (default: the root).")
    pattern: Text | None = Field(None, description="Glob to match, relative to path, e.g. `**/*.py`.")


class GrepInput(ToolInput):
    pattern: FilledText = Field(description="Python regular expression to search for.")
    path: Text | None = Field(
        None, description=f"File or folder to search, {_PATH_NOTE} (default: the root)."
    )
    glob: Text | None = Field(None, description="Only search files matching this glob, e.g. `*.py`.")


class WriteFileInput(ToolInput):
    path: FilledText = Field(description=f"The file to write, {_PATH_NOTE}.")
    content: Text = Field(description="The complete new content of the file.")


class EditFileInput(ToolInput):
    path: FilledText = Field(description=f"The file to edit, {_PATH_NOTE}.")
    old_string: Text = Field(description="The exact text to replace.")
    new_string: Text = Field(description="The text to put in its place (may be empty).")
    replace_all: Flag = Field(
        False, description="Replace every occurrence instead of requiring exactly one (default false)."
    )


class BashInput(ToolInput):
    command: Annotated[FilledText, AfterValidator(_command)] = Field(description="The command line to run.")
    timeout: PositiveNumber | None = Field(None, description="Timeout in seconds (default 120, at most 600).")


class ReadMemoryInput(ToolInput):
    # The store is checked after the other inputs: a malformed input is named before a wrong level.
    level: FilledText = Field(
        description="Which store: project or user.", json_schema_extra={"enum": list(_LEVELS)}
    )
    filename: FilledText = Field(
        description="The note's filename, e.g. `project_knowledge_build.md`, or `MEMORY.md`."
    )
    offset: Line | None = Field(None, description="First line to read, 1-based (default 1).")
    limit: Count | None = Field(None, description="How many lines to read (default 2000).")

    @model_validator(mode="after")
    def _known_level(self) -> ReadMemoryInput:
        if self.level not in _LEVELS:
            raise _unknown_level(self.level)
        return self


class SearchMemoryInput(ToolInput):
    query: Annotated[FilledText, AfterValidator(_topic)] = Field(
        description="A few words naming the topic, e.g. `frobnicator calibration`."
    )
    level: Level | None = Field(None, description="Search only this store (default: both).")
    limit: Annotated[int, Field(ge=1, le=SEARCH_MEMORY_MAX_LIMIT), BeforeValidator(integer)] | None = Field(
        None, description="How many lines to return (default 10)."
    )


class ReadResultInput(ToolInput):
    id: FilledText = Field(description="The stored result's id, e.g. `r0123456789abcdef`.")
    offset: Line | None = Field(None, description="First line to read, 1-based (default 1).")
    limit: Count | None = Field(None, description="How many lines to read (default 2000).")


class TaskInput(ToolInput):
    """The task tool's schema. The runner starts a task (run_tool does not) and checks only that
    its prompt is not blank."""

    description: FilledText = Field(description="A short (3-6 words) label for the task, shown to the user.")
    prompt: FilledText = Field(description="The complete, self-contained instructions for the sub-agent.")


class _ToolSchema(GenerateJsonSchema):
    """Pydantic's JSON schema without what the tool contract leaves out: an optional input is
    its type alone (no ``anyOf`` with null, no ``default``), and nothing has a title."""

    # The schemas given are pydantic-core's typed dicts (not imported: pydantic is the dependency).
    def nullable_schema(self, schema: Any) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: Any) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


# Each input's keys in this order; any other key is a contract change and fails loudly.
_PROPERTY_KEYS = ("type", "enum", "minimum", "maximum", "description")


@cache  # generated on first use rather than at import: importing the tools stays cheap
def input_schema(model: type[ToolInput]) -> dict[str, Any]:
    """The ``input_schema`` the Messages API gets for ``model``: an object of its fields in
    order, the required ones listed (an empty list too), no other keys allowed."""
    generated = model.model_json_schema(schema_generator=_ToolSchema)
    properties: dict[str, dict[str, Any]] = {}
    for name, prop in generated["properties"].items():
        extra = set(prop) - set(_PROPERTY_KEYS)
        if extra:
            raise ValueError(f"{model.__name__}.{name}: schema keys outside the contract: {sorted(extra)}")
        properties[name] = {key: prop[key] for key in _PROPERTY_KEYS if key in prop}
    return {
        "type": "object",
        "properties": properties,
        "required": list(generated.get("required", [])),
        "additionalProperties": False,
    }


# -- the tools ------------------------------------------------------------------------------------

_SPECS = [
    ToolSpec(
        name="read_file",
        display=(("path", "{}"),),
        kind="read",
        description=(
            "Read a text file of the workspace. Returns its lines numbered like `cat -n` "
            "(line number, tab, text). Reads at most 2000 lines by default; use `offset` (first line, "
            "1-based) and `limit` (number of lines) to read a part or to read on where the output says "
            "it was cut. Lines longer than 2000 characters are cut. Binary files are refused; files "
            "over 10 MB can only be read in parts (give offset/limit). Use list_files or grep to find "
            "files first; read a file before editing it."
        ),
        input=ReadFileInput,
    ),
    ToolSpec(
        name="list_files",
        display=(("pattern", "{}"), ("path", "in {}")),
        kind="read",
        description=(
            "List files and folders of the workspace, sorted, as workspace-relative paths; folders end "
            "with `/`. Without `pattern` it lists the direct entries of `path` (default: the workspace "
            "root). `pattern` is a glob matched against paths relative to `path`: `*` and `?` stay "
            "within one folder, `**` spans folders, `{a,b}` gives alternatives; e.g. `**/*.py` finds "
            "every Python file below `path`, `src/*/` the folders in src. The folders .git, .venv, "
            "node_modules and __pycache__ are skipped unless the pattern names them. At most 1000 "
            "entries are shown, with a note saying how many more there were."
        ),
        input=ListFilesInput,
    ),
    ToolSpec(
        name="grep",
        display=(("pattern", "{}"), ("path", "in {}"), ("glob", "files {}")),
        kind="read",
        description=(
            "Search file contents with a Python regular expression (`re` syntax, matched per line; use "
            "`(?i)` for case-insensitive). Prints one line per match as `path:line: text`, files in "
            "sorted order. `path` is a file or a folder to search recursively (default: the workspace "
            "root); `glob` keeps only files whose name (or, if it contains `/`, path relative to `path`) "
            "matches, e.g. `*.py` or `src/**/*.ts`. Binary files and the folders .git, .venv, "
            "node_modules and __pycache__ are skipped. At most 500 matches are shown, with a note "
            "giving the total; narrow the pattern, path or glob if you hit it. A search is stopped "
            "with an error after 20 s (a pattern with nested repeats like `(a+)+` can backtrack "
            "for ever on some lines)."
        ),
        input=GrepInput,
    ),
    ToolSpec(
        name="write_file",
        display=(("path", "{}"),),
        kind="write",
        description=(
            "Create a file or replace its whole content (written atomically; missing parent folders "
            "are created). Use it for new files or complete rewrites; for changes to an existing file "
            "prefer edit_file. Paths must be inside the workspace; writing inside .git/ or the memory "
            "stores (.PseudoClaude/memory) is refused. May need the user's permission."
        ),
        input=WriteFileInput,
    ),
    ToolSpec(
        name="edit_file",
        display=(("path", "{}"),),
        kind="write",
        description=(
            "Replace exact text in an existing text file. `old_string` must match the file exactly "
            "(whitespace and indentation included; copy it from read_file's output without the line "
            "number prefix) and occur exactly once, unless `replace_all` is true, which replaces every "
            "occurrence. If it occurs more than once, include more surrounding lines to make it unique. "
            "Read the file before editing it. May need the user's permission."
        ),
        input=EditFileInput,
    ),
    ToolSpec(
        name="bash",
        display=(("command", "{}"),),
        kind="execute",
        description=(
            "Run a shell command with `bash -c` in the workspace root, without a terminal and with no "
            "input (stdin is empty: interactive programs and prompts will not work; pass flags such as "
            "`--yes` or `--no-pager`). Returns the exit code, stdout and stderr; long output keeps its "
            "beginning and end. `timeout` is in seconds (default 120, at most 600); on timeout the "
            "command and every process it started are killed. Each call runs in a fresh shell: `cd` "
            "and variables do not carry over. Background processes that keep the output open are "
            "stopped when the command ends; redirect their output to a file to keep one running. "
            "Prefer read_file, list_files and grep for reading and searching files. May need the "
            "user's permission."
        ),
        input=BashInput,
    ),
    ToolSpec(
        name="read_memory",
        display=(("filename", "{}"), ("level", "{} level")),
        kind="read",
        description=(
            "Read one long-term memory note in full. The memory index in the system prompt lists notes "
            "as `- [type] title — summary (filename)`; give the note's level (`project` for notes under "
            "Project Memory, `user` for notes under User Memory) and its filename. Filename `MEMORY.md` "
            "returns that level's whole index (useful when the prompt's index was cut). Long text is "
            "shown a part at a time: at most 2000 lines by default, and the output ends with the "
            "`offset` to read on from when it was cut; `offset` (first line, 1-based) and `limit` "
            "(number of lines) work as for read_file. Notes may be outdated: verify claims about code "
            "before relying on them. Memory cannot be written with tools; it is updated automatically "
            "after the turn."
        ),
        input=ReadMemoryInput,
    ),
    ToolSpec(
        name="search_memory",
        display=(("query", "{}"), ("level", "{} level")),
        kind="read",
        description=(
            "Search every long-term memory note by topic: its title, summary, body and filename, "
            "including the notes the memory index in the system prompt leaves out when there are many. "
            "Returns the matching notes' index lines, best first, one per line as "
            "`<level>: - [type] title — summary (filename)`, or `no card matches` when no note holds "
            "enough of the query's words. Read a note's body "
            "with read_memory (that level and the filename in parentheses). Words are matched whole, "
            "English endings aside (`calibrate` finds `calibration`, the exact word ranking first); "
            "names like `max_length` or `3.9` match as written; a note holding more of the query's "
            "rarer words, more often, ranks higher, so name the topic in a few specific words. `level` searches one store only; `limit` is how many lines to return "
            "(default 10, at most 50). A project store that is not trusted yet is not searched."
        ),
        input=SearchMemoryInput,
    ),
    ToolSpec(
        name="read_result",
        kind="read",
        description=(
            "Read a tool result that was too large to keep in the conversation. Such a result shows "
            'only its head and tail and says `read_result {"id": "r…"}`; this returns its lines '
            "exactly as the tool produced them, a part at a time (a line over 4000 characters counts "
            "as several). `offset` is the first line (1-based) and `limit` the number of lines "
            "(default 2000, and about 24,000 characters at most); a cut output ends with the "
            "`offset` to read on from."
        ),
        input=ReadResultInput,
    ),
    ToolSpec(
        name="task",
        display=(("description", "{}"),),
        kind="agent",
        description=(
            "Start a sub-agent to do a self-contained research task over the workspace, such as "
            "finding where something is implemented or summarising how a module works. It starts "
            "with a fresh conversation (it does not see this one), can only use the read-only tools "
            "(read_file, list_files, grep, read_memory, search_memory, read_result), and returns its final answer as the result. "
            "Write `prompt` so it stands alone: say exactly what to find and what to report back."
        ),
        input=TaskInput,
    ),
]

TOOL_SPECS: dict[str, ToolSpec] = {s.name: s for s in _SPECS}
READ_ONLY_TOOLS: frozenset[str] = frozenset(
    {"read_file", "list_files", "grep", "read_memory", "search_memory", "read_result"}
)


def api_tools(names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Tool definitions for the Messages API (``name``, ``description``, ``input_schema``), in
    the contract's order; ``names`` picks a subset. Fresh copies: the caller may annotate them."""
    if names is None:
        wanted = set(TOOL_SPECS)
    else:
        wanted = set(names)
        unknown = sorted(wanted - set(TOOL_SPECS))
        if unknown:
            raise ValueError(f"unknown tool name(s): {', '.join(unknown)}")
    return [
        {"name": s.name, "description": s.description, "input_schema": copy.deepcopy(s.input_schema)}
        for s in _SPECS
        if s.name in wanted
    ]


def needs_permission(name: str) -> bool:
    """True for tools that write or execute (write_file, edit_file, bash)."""
    spec = TOOL_SPECS.get(name)
    return spec is not None and spec.kind in ("write", "execute")
