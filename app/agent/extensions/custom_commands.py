"""Custom slash commands: Markdown files whose text becomes the prompt.

Read from three folders, in this order of precedence (the first with a name wins, the others
with that name are reported as shadowed):

1. the project's ``.PseudoClaude/commands/``,
2. the project's ``.claude/commands/`` (Claude Code's folder, read as it is),
3. the person's ``$PSEUDOCLAUDE_HOME/commands/``.

The project's own command is the one its files are written for, so it wins over a personal
one of the same name. The project's two folders came with the clone: their commands load only
once the person trusted exactly their files (kind ``commands``; the digest covers every ``.md``
file of both folders, by relative path and bytes), and until then only their names are known
(``waiting``).

``frontend/lint.md`` is ``/frontend:lint``. A file may start with front matter as Claude Code
has it (``description``, ``argument-hint``, ``model``, ``allowed-tools`` as a string of
comma-separated rules or a list); without it the description is the body's first line. In the
body, ``$ARGUMENTS`` is everything after the name and ``$1`` … ``$9`` its words split as a
shell would (quotes respected; a missing one is empty; ``$10`` is ``$1`` then ``0``). A body
that uses neither gets the arguments appended as a last ``ARGUMENTS: …`` line. ``@path`` is left
as written: the prompt's own ``@`` attachment reads it.

A file that cannot be a command (front matter that is not YAML, not UTF-8, over 256 KiB, a
symlink leaving its folder, a name that is not a command name or that a built-in command has)
is listed in ``broken`` with a one-line why; loading never raises for a file.

A text names a command (``parse_invocation``) when it starts with ``/`` and a name of letters,
digits, ``_``, ``-``, ``.`` and ``:`` (the first a letter, digit or ``_``) followed by whitespace or
its end. A first word holding a further ``/`` is a path, not a command (``/etc/hosts is odd``,
``/usr/bin/env python``), and so is one starting with ``//``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict

from app.agent.config.layers import PendingTrust, is_trusted
from app.agent.config.project_trust import ProjectTrust
from app.agent.permissions.rules import Rule, RuleError, parse_rule, split_rules
from memory.store.paths import pseudoclaude_home

__all__ = [
    "MAX_COMMAND_BYTES",
    "BrokenCommand",
    "CommandCatalog",
    "CustomCommand",
    "ExpandedCommand",
    "expand",
    "load_custom_commands",
    "parse_invocation",
]

MAX_COMMAND_BYTES = 256 * 1024
PROJECT_FOLDERS = (Path(".PseudoClaude") / "commands", Path(".claude") / "commands")
_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9])")
_HINT_LINE = re.compile(r"^(argument-hint[ \t]*:[ \t]*)(.*?)[ \t]*$", re.MULTILINE)
_DESCRIPTION_MAX = 100
_INVOCATION = re.compile(r"/([A-Za-z0-9_][A-Za-z0-9_:.-]*)(?:\s+(.*))?", re.DOTALL)


def parse_invocation(text: str) -> tuple[str, str] | None:
    """``"/name args…"`` -> (name, args); None when the text does not start with a command name
    (plain words, a path such as ``/etc/hosts …``, ``//…``)."""
    m = _INVOCATION.fullmatch(text.strip())
    return (m.group(1), m.group(2) or "") if m is not None else None


class CustomCommand(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str  # without the slash: "frontend:lint"
    path: Path
    scope: Literal["project", "user"]
    source: str  # the folder as shown: ".PseudoClaude/commands", ".claude/commands", "~/…/commands"
    description: str
    argument_hint: str | None = None
    model: str | None = None
    allowed_tools: tuple[Rule, ...] = ()
    body: str
    problems: tuple[str, ...] = ()  # allowed-tools entries that were refused, one line each


class BrokenCommand(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str | None  # None when the file's name cannot be one
    path: Path
    why: str


class ExpandedCommand(BaseModel):
    """A custom command invoked: the prompt to send and what it asks of the turn."""

    model_config = ConfigDict(frozen=True)

    command: CustomCommand
    prompt: str

    @property
    def model(self) -> str | None:
        return self.command.model

    @property
    def allowed_tools(self) -> tuple[Rule, ...]:
        return self.command.allowed_tools


class CommandCatalog(BaseModel):
    model_config = ConfigDict(frozen=True)

    commands: tuple[CustomCommand, ...] = ()  # by name
    broken: tuple[BrokenCommand, ...] = ()
    notes: tuple[str, ...] = ()  # shadowed commands, one line each
    waiting: tuple[str, ...] = ()  # names of the project's commands that wait for trust
    pending_trust: PendingTrust | None = None

    def get(self, name: str) -> CustomCommand | None:
        name = name.removeprefix("/")
        return next((c for c in self.commands if c.name == name), None)

    def find(self, name: str) -> CustomCommand | None:
        """The command of that name; else the one whose name differs only in case (typed names
        are read as the app's own commands are)."""
        name = name.removeprefix("/")
        return self.get(name) or next(
            (c for c in self.commands if c.name.casefold() == name.casefold()), None
        )

    def broken_named(self, name: str) -> BrokenCommand | None:
        name = name.removeprefix("/").casefold()
        return next((b for b in self.broken if b.name is not None and b.name.casefold() == name), None)

    def listing(self) -> tuple[tuple[str, str, str], ...]:
        """``("/name", argument hint or "", description)`` for ``/help`` and the completion."""
        return tuple((f"/{c.name}", c.argument_hint or "", c.description) for c in self.commands)

    def expand_prompt(self, text: str) -> ExpandedCommand | None:
        """``"/name args…"`` -> the command's prompt; None when ``text`` names no custom command."""
        invoked = parse_invocation(text)
        command = self.get(invoked[0]) if invoked is not None else None
        if invoked is None or command is None:
            return None
        return ExpandedCommand(command=command, prompt=expand(command, invoked[1]))


# -- expansion --------------------------------------------------------------------------------


def expand(command: CustomCommand, arguments: str) -> str:
    """The command's body with ``$ARGUMENTS`` and ``$1`` … ``$9`` filled in."""
    args = arguments.strip()
    try:
        words = shlex.split(args)
    except ValueError:  # an unclosed quote: the words as typed
        words = args.split()

    def fill(m: re.Match[str]) -> str:
        key = m.group(1)
        if key == "ARGUMENTS":
            return args
        i = int(key)
        return words[i - 1] if i <= len(words) else ""

    body = command.body
    if _PLACEHOLDER.search(body) is None:
        return body.rstrip("\n") + (f"\n\nARGUMENTS: {args}" if args else "")
    return _PLACEHOLDER.sub(fill, body)


# -- reading one file -------------------------------------------------------------------------


class _Broken(Exception):
    pass


def _front_matter(text: str) -> tuple[str | None, str]:
    """(the front matter's text or None, the body)."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return None, text
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip() == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    raise _Broken("the front matter has no closing '---' line")


def _hint_as_text(front: str) -> str:
    """``argument-hint`` quoted as a YAML string: Claude Code writes it as ``[pr-number]
    [priority]``, which YAML would read as a list or refuse; it is text as written."""

    def quote(m: re.Match[str]) -> str:
        value = m.group(2).strip()
        if not value or value[0] in "'\"":
            return m.group(0)
        return m.group(1) + json.dumps(value)

    return _HINT_LINE.sub(quote, front)


class _FrontMatter(BaseModel):
    """The keys of a command file's front matter the app reads (others are ignored); a scalar
    given for a text key is read as its text."""

    model_config = ConfigDict(frozen=True)

    description: str | None = None
    argument_hint: str | None = None
    model: str | None = None
    allowed_tools: object = None  # checked rule by rule (``_allowed_tools``)


def _text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return str(value)


def _meta(front: str) -> _FrontMatter:
    try:
        data = yaml.safe_load(_hint_as_text(front))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise _Broken(f"the front matter is not YAML{where}: {problem}") from None
    if data is None:
        return _FrontMatter()
    if not isinstance(data, dict):
        raise _Broken("the front matter is not a mapping of keys")
    keys = {str(key): value for key, value in data.items()}
    return _FrontMatter(
        description=_text(keys.get("description")),
        argument_hint=_text(keys.get("argument-hint")),
        model=_text(keys.get("model")),
        allowed_tools=keys.get("allowed-tools"),
    )


def _allowed_tools(value: object) -> tuple[tuple[Rule, ...], tuple[str, ...]]:
    """The rules of ``allowed-tools``; an entry that is not a rule is dropped with a line, the
    others kept."""
    if value is None:
        return (), ()
    if isinstance(value, str):
        items = _split_rules(value)
    elif isinstance(value, list):
        items = [v for item in value for v in (_split_rules(item) if isinstance(item, str) else [repr(item)])]
    else:
        return (), (f"allowed-tools must be a string or a list, not {type(value).__name__}",)
    rules: list[Rule] = []
    problems: list[str] = []
    for item in items:
        try:
            rules.append(parse_rule(item))
        except RuleError as e:
            problems.append(f"allowed-tools: {item.strip()!r} ignored: {e}")
    return tuple(rules), tuple(problems)


def _split_rules(value: str) -> list[str]:
    return [s for s in split_rules(value)[0] if s.strip()]


def _description(meta: _FrontMatter, body: str) -> str:
    given = meta.description
    if given is not None and given.strip():
        text = given
    else:
        text = next((line for line in body.splitlines() if line.strip()), "")
        text = text.strip().lstrip("#").strip()
    text = " ".join(text.split())
    return text if len(text) <= _DESCRIPTION_MAX else text[: _DESCRIPTION_MAX - 1] + "…"


def _read(path: Path, root: Path) -> bytes:
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if path.is_symlink() and not (real == real_root or real.startswith(real_root + os.sep)):
        raise _Broken("a symlink leaving its commands folder")
    try:
        size = os.stat(path).st_size
        if size > MAX_COMMAND_BYTES:
            raise _Broken(f"larger than {MAX_COMMAND_BYTES // 1024} KiB ({size} bytes)")
        with open(path, "rb") as f:
            data = f.read(MAX_COMMAND_BYTES + 1)
    except OSError as e:
        raise _Broken(f"cannot be read ({e.strerror or e})") from None
    if len(data) > MAX_COMMAND_BYTES:
        raise _Broken(f"larger than {MAX_COMMAND_BYTES // 1024} KiB")
    return data


def _command(
    path: Path, root: Path, name: str, scope: Literal["project", "user"], source: str
) -> CustomCommand:
    data = _read(path, root)
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise _Broken("not UTF-8 text") from None
    front, body = _front_matter(text)
    meta = _meta(front) if front is not None else _FrontMatter()
    rules, problems = _allowed_tools(meta.allowed_tools)
    hint, model = meta.argument_hint, meta.model
    return CustomCommand(
        name=name,
        path=path,
        scope=scope,
        source=source,
        description=_description(meta, body),
        argument_hint=(hint.strip() or None) if hint is not None else None,
        model=(model.strip() or None) if model is not None else None,
        allowed_tools=rules,
        body=body,
        problems=problems,
    )


# -- the folders ------------------------------------------------------------------------------


def _files(root: Path) -> tuple[list[tuple[Path, str | None, str]], list[BrokenCommand]]:
    """Each ``.md`` file under ``root``: (path, its command name or None, why not a name)."""
    found: list[tuple[Path, str | None, str]] = []
    broken: list[BrokenCommand] = []
    if not root.is_dir():
        return found, broken
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        here = Path(folder)
        for d in list(dirs):
            if (here / d).is_symlink():
                dirs.remove(d)
                broken.append(
                    BrokenCommand(name=None, path=here / d, why="a symlinked folder is not followed")
                )
        for f in sorted(files):
            if f.startswith(".") or not f.endswith(".md"):
                continue
            path = here / f
            parts = [*path.relative_to(root).parent.parts, f[:-3]]
            bad = next((p for p in parts if not _SEGMENT.fullmatch(p)), None)
            if bad is not None:
                found.append((path, None, f"{bad!r} is not a command name (letters, digits, '-', '_', '.')"))
            else:
                found.append((path, ":".join(parts), ""))
    return found, broken


def _trust_blob(workspace: Path) -> tuple[bytes, str]:
    """The bytes the digest covers (each project command file's relative path and bytes, sorted)
    and the text shown for them."""
    entries: list[tuple[str, bytes]] = []
    for folder in PROJECT_FOLDERS:
        files, _ = _files(workspace / folder)
        for path, _name, _why in files:
            rel = path.relative_to(workspace).as_posix()
            try:
                if path.is_symlink():
                    data = b"symlink -> " + os.fsencode(os.readlink(path))
                else:
                    with open(path, "rb") as f:
                        data = f.read(MAX_COMMAND_BYTES + 1)
            except OSError as e:
                data = f"unreadable: {e.strerror}".encode()
            entries.append((rel, data))
    entries.sort()
    blob = b"".join(
        rel.encode("utf-8", "surrogateescape") + b"\0" + str(len(data)).encode() + b"\0" + data
        for rel, data in entries
    )
    shown = "\n".join(f"── {rel} ──\n{data.decode('utf-8', 'replace')}" for rel, data in entries)
    return blob, shown


def _pending_trust(workspace: Path, home: Path | None, trust: ProjectTrust | None) -> PendingTrust | None:
    """The trust the project's command files wait for; None when it has none or they are trusted."""
    blob, shown = _trust_blob(workspace)
    if not blob:
        return None
    wanted = PendingTrust(kind="commands", shown=shown, digest="sha256:" + hashlib.sha256(blob).hexdigest())
    return None if is_trusted(workspace, home, wanted, trust) else wanted


def _load_file(
    path: Path,
    root: Path,
    name: str,
    scope: Literal["project", "user"],
    source: str,
    builtins: set[str],
) -> CustomCommand | BrokenCommand:
    """One file as a command, or why it cannot be one."""
    if name.casefold() in builtins:
        return BrokenCommand(name=name, path=path, why=f"/{name} is a built-in command; rename the file")
    try:
        return _command(path, root, name, scope, source)
    except _Broken as e:
        return BrokenCommand(name=name, path=path, why=str(e))


def load_custom_commands(
    workspace: Path,
    home: Path | None = None,
    *,
    builtin: Iterable[str] = (),
    trust: ProjectTrust | None = None,
) -> CommandCatalog:
    """The commands of the three folders. Blocking (small files): call it off an event loop.
    ``builtin``: the app's own command names (with or without the slash); a file with one of
    them is refused."""
    workspace = Path(workspace)
    user_root = (Path(home) if home is not None else pseudoclaude_home()) / "commands"
    builtins = {b.removeprefix("/").casefold() for b in builtin}
    pending = _pending_trust(workspace, home, trust)
    roots: list[tuple[Path, Literal["project", "user"], str]] = [
        (workspace / f, "project", f.as_posix()) for f in PROJECT_FOLDERS
    ]
    roots.append((user_root, "user", str(user_root)))
    commands: dict[str, CustomCommand] = {}
    broken: list[BrokenCommand] = []
    notes: list[str] = []
    waiting: list[str] = []
    for root, scope, source in roots:
        files, bad_dirs = _files(root)
        if scope == "project" and pending is not None:
            waiting.extend(name for _, name, _ in files if name is not None and name not in waiting)
            continue
        broken.extend(bad_dirs)
        for path, name, why in files:
            if name is None:
                broken.append(BrokenCommand(name=None, path=path, why=why))
                continue
            found = _load_file(path, root, name, scope, source, builtins)
            winner = commands.get(name)
            if isinstance(found, BrokenCommand):
                broken.append(found)
            elif winner is not None:
                notes.append(f"/{name} in {source} is shadowed by /{name} in {winner.source}")
            else:
                commands[name] = found
    return CommandCatalog(
        commands=tuple(sorted(commands.values(), key=lambda c: c.name)),
        broken=tuple(broken),
        notes=tuple(notes),
        waiting=tuple(waiting),
        pending_trust=pending,
    )
