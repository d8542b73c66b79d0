"""Permission rules that last: ``allow``, ``ask`` and ``deny`` lists under ``[permissions]``.

They are read from the user's ``config.toml``, the project's ``.PseudoClaude/settings.toml`` and
the personal ``.PseudoClaude/settings.local.toml`` (``app.agent.config.layers``; read by
``loading``). A project's file came with the clone: its ``deny`` and ``ask`` rules only tighten and
apply at once, its ``allow`` rules wait until the person trusts exactly that list (kind
``permissions``).

Rules:

- ``TOOL`` covers every call of the tool: ``edit_file``, ``mcp__github__create_issue``, and
  ``mcp__github`` (or ``mcp__github__*``) for every tool of that MCP server. Claude Code's names
  are read as ours (a tool lists its ``aliases``: ``Bash`` is ``bash``, ``Edit`` ``edit_file``,
  ``Write`` ``write_file``, ``Read`` ``read_file``, ``Grep`` ``grep``, ``Glob``/``LS`` ``list_files``).
- ``bash(git status)`` covers exactly that command (compared word by word, quotes removed): no
  extra word and no redirection it does not name (``git status < x``, ``git status 2>&1`` ask).
- ``bash(npm run test:*)`` covers a command whose words start with the words before ``:*``; the
  last of them may be the start of a longer word, as in Claude Code (``npm run test:unit`` and
  ``npm run tests`` match). End the prefix with a space to require whole words:
  ``bash(git diff :*)`` covers ``git diff HEAD`` but not ``git diff-tree``. Any other ``*`` is
  a literal character. A prefix rule covers no redirection either, unless it names it
  (``bash(make 2>&1:*)`` covers ``make test 2>&1`` and ``make test``).
- ``edit_file(src/**)``, ``write_file(docs/*.md)``, ``read_file(.env)``: a ``.gitignore``-style
  pattern over the workspace-relative path the tool is given (the tools whose ``rule_kind`` is
  ``path``: ``read_file``, ``write_file``, ``edit_file``, ``list_files``, ``grep``). A pattern
  without ``/`` matches at any depth, a leading ``/`` (or ``./``) anchors it at the workspace.
  A path given absolute, or leaving the workspace (``..`` or a symlink), never matches an
  ``allow``; a ``deny``/``ask`` is matched against where it really is.
- ``web_fetch(domain:docs.python.org)`` covers exactly that host, ``web_fetch(domain:*.python.org)``
  any name under it but not ``python.org`` itself (the tools whose ``rule_kind`` is ``domain``;
  hosts compared lower case, IDNA-encoded, without a trailing dot: see ``domains``). The bare
  ``web_fetch`` covers every public host; a loopback, private or link-local one also needs an
  allow rule naming it exactly (``names_host``).

A ``bash`` pattern rule (a tool whose ``rule_kind`` is ``command``) matches whole simple commands
only: the command is split (see ``shell_split``) and, for an ``allow``, every part must be
allowed, no part may write a file by a redirection, a part's redirections (input, output and fd
duplications alike) must each be named by the rule, and nothing in it may be left unparsed (a
substitution, a heredoc…: such a command asks; so does one that starts with ``NAME=value``). For
``deny`` and ``ask``, any part that matches is enough, leading assignments skipped and any
redirection the rule does not name ignored. A bash deny rule matches the command's own words: it
does not look through ``sudo``, ``env``, ``xargs``, ``bash -c``, ``eval`` or a script, and a
command it cannot fully read asks rather than being denied. Deny wins over ask over allow; a call
no rule matches gets the tool's default (``Tool.asks``): ask for writing, executing and MCP tools,
allow for the others.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Literal

import pathspec
from pydantic import BaseModel, ConfigDict

from app.agent.config.layers import PendingTrust, Scope
from app.agent.permissions.domains import HostError, host_key, parse_domain_pattern
from app.agent.permissions.modes import PermissionMode
from app.agent.permissions.shell_split import Redirection, SimpleCommand, split_command
from app.agent.tools.registry import BUILTIN_TOOLS, ToolRegistry
from app.agent.tools.tool import RuleTarget

__all__ = [
    "Decision",
    "ListName",
    "PermissionRules",
    "Rule",
    "RuleDecision",
    "RuleError",
    "SourcedRule",
    "default_decision",
    "parse_rule",
    "parse_rule_list",
    "path_forms",
    "rule_touches",
    "split_rules",
]

Decision = Literal["allow", "ask", "deny"]
ListName = Literal["allow", "ask", "deny"]
LISTS: tuple[ListName, ...] = ("deny", "ask", "allow")

_RULE = re.compile(r"([A-Za-z0-9_*-]+)(?:\((.*)\))?", re.DOTALL)


class RuleError(ValueError):
    """A rule that cannot be used, with a one-line reason."""


class Rule(BaseModel):
    """One rule as written (``text``), and what it names: ``tool`` (ours, or ``mcp__SERVER`` for
    a whole server) and ``pattern`` (None: every call of the tool)."""

    model_config = ConfigDict(frozen=True)

    text: str
    tool: str
    pattern: str | None = None

    @property
    def server_wide(self) -> bool:
        return self.tool.startswith("mcp__") and "__" not in self.tool[5:]

    def covers_tool(self, name: str) -> bool:
        if self.server_wide:
            return name.startswith(self.tool + "__")
        return name == self.tool

    def matches_part(self, part: SimpleCommand, *, tightening: bool = False) -> bool:
        """A ``bash`` pattern rule against one simple command. ``tightening`` (a deny or ask rule):
        a part holding at least the redirections the rule names, also after its leading
        ``NAME=value`` words (``FOO=1 rm x 2>&1`` is still ``rm x``). An allow never covers a part
        that starts with ``NAME=value`` (the assignments may change what runs, and ``make=1 sh x``
        would otherwise start like ``bash(make:*)``), nor a redirection the rule does not name
        (``sh < evil.sh`` for ``bash(sh)``: it changes what the command reads or writes)."""
        assert self.pattern is not None
        words, prefix, whole, named = _bash_pattern(self.pattern)
        if tightening:
            if not set(named) <= set(part.redirections):
                return False
            if part.command_words != part.words:
                bare = SimpleCommand(part.command_words, redirections=part.redirections)
                if self.matches_part(bare, tightening=True):
                    return True
        elif part.command_words != part.words:
            return False
        elif not _names_redirections(part.redirections, named, exact=not prefix):
            return False
        if not prefix:
            return part.words == words
        n = len(words)
        if len(part.words) < n or part.words[: n - 1] != words[: n - 1]:
            return False
        return part.words[n - 1] == words[-1] if whole else part.words[n - 1].startswith(words[-1])

    def matches_path(self, rel: str) -> bool:
        assert self.pattern is not None
        return _path_spec(self.pattern).match_file(rel)

    def matches_host(self, key: str, *, exactly: bool = False) -> bool:
        """A ``domain:`` pattern against a host as ``host_key`` gives it; ``exactly``: only a
        pattern naming that one host (never a wildcard)."""
        assert self.pattern is not None
        try:
            pattern = parse_domain_pattern(self.tool, self.pattern)
        except HostError:
            return False
        return pattern.matches(key) and not (exactly and pattern.wildcard)


class SourcedRule(BaseModel):
    """A rule with where it came from: the list, the file (or flag) and its scope."""

    model_config = ConfigDict(frozen=True)

    rule: Rule
    list: ListName
    scope: Scope
    source: str  # the file as shown (project files relative), "--allow-tools", "/name allowed-tools"

    @property
    def where(self) -> str:
        return f"{self.source} ({self.list})"


class RuleDecision(BaseModel):
    model_config = ConfigDict(frozen=True)

    decision: Decision
    reason: str  # one line; a deny's reason is the tool result the model gets
    rule: SourcedRule | None = None  # None: the tool's default decided


def _names_redirections(
    used: tuple[Redirection, ...], named: tuple[Redirection, ...], *, exact: bool
) -> bool:
    """Whether a rule naming ``named`` covers a part redirecting ``used``: an exact rule the same
    ones in the same order (``2>&1 >f`` is not ``>f 2>&1``), a prefix rule any of those it names."""
    return used == named if exact else set(used) <= set(named)


# -- parsing ----------------------------------------------------------------------------------


@lru_cache(maxsize=1024)
def _bash_pattern(pattern: str) -> tuple[tuple[str, ...], bool, bool, tuple[Redirection, ...]]:
    """(words, is a prefix, prefix needs whole words, the redirections it names); RuleError when
    it is not one command."""
    prefix = pattern.endswith(":*")
    body = pattern[:-2] if prefix else pattern
    whole = prefix and body[-1:].isspace()
    parsed = split_command(body)
    if parsed.problem is not None:
        raise RuleError(f"the command cannot be a rule: it holds {parsed.problem}")
    if len(parsed.parts) != 1:
        raise RuleError("a bash rule names one simple command (no `&&`, `;`, `|`, `&` or newline)")
    part = parsed.parts[0]
    if part.writes_file:
        raise RuleError("a bash rule cannot hold a redirection to a file")
    if not part.words:
        raise RuleError("the command is empty; write `bash` alone to cover every command")
    return part.words, prefix, whole, part.redirections


def _normalize_path_pattern(pattern: str) -> str:
    if pattern.startswith("./"):
        pattern = "/" + pattern[2:]
    return pattern


@lru_cache(maxsize=1024)
def _path_spec(pattern: str) -> pathspec.PathSpec:
    return pathspec.GitIgnoreSpec.from_lines([_normalize_path_pattern(pattern)])


def _check_path_pattern(pattern: str) -> None:
    if any(c in pattern for c in "\x00\n\r"):
        raise RuleError("a path pattern is one line")
    if pattern.startswith("!"):
        raise RuleError("a negated pattern (!) is not a rule; put the path in another list instead")
    if pattern.startswith(("~", "//")):
        raise RuleError("path patterns are relative to the workspace (a leading / anchors there)")
    if ".." in _normalize_path_pattern(pattern).strip("/").split("/"):
        raise RuleError("a path pattern cannot leave the workspace with '..'")
    try:
        _path_spec(pattern)
    except Exception as e:  # pathspec raises its own and re errors for a broken pattern
        raise RuleError(f"not a .gitignore-style pattern ({' '.join(str(e).split())})") from None


def parse_rule(text: object, tools: ToolRegistry = BUILTIN_TOOLS) -> Rule:
    """One rule naming a tool of ``tools`` (or an MCP tool or server); RuleError (one line) when
    it is malformed (a file may hold any TOML value)."""
    if not isinstance(text, str):
        raise RuleError(f"a rule is a string, not {type(text).__name__}")
    t = text.strip()
    if not t:
        raise RuleError("an empty rule")
    m = _RULE.fullmatch(t)
    if m is None:
        if "(" in t and not t.endswith(")"):
            raise RuleError("a pattern ends with ')', as in bash(git status:*)")
        raise RuleError(
            "a rule is a tool name, or a tool name with a pattern in parentheses: bash(git status:*)"
        )
    name, pattern = m.group(1), m.group(2)
    if name.startswith("mcp__"):
        return _mcp_rule(t, name, pattern)
    tool = tools.named(name)
    if tool is None:
        close = [n for n in tools.names() if n.lower() == name.lower()]
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise RuleError(f"unknown tool {name!r}{hint}")
    if pattern is None:
        return Rule(text=t, tool=tool.name)
    pattern = pattern.strip()
    if not pattern:
        raise RuleError(f"empty parentheses: write {tool.name} alone to cover every call")
    if tool.rule_kind == "command":
        _bash_pattern(pattern)
    elif tool.rule_kind == "path":
        _check_path_pattern(pattern)
    elif tool.rule_kind == "domain":
        try:
            parse_domain_pattern(tool.name, pattern)
        except HostError as e:
            raise RuleError(str(e)) from None
    else:
        raise RuleError(f"{tool.name} takes no pattern (only bash, the file tools and web_fetch do)")
    return Rule(text=t, tool=tool.name, pattern=pattern)


def _mcp_rule(text: str, name: str, pattern: str | None) -> Rule:
    tool = name[:-3] if name.endswith("__*") else name
    rest = tool[5:]
    if not rest or rest.startswith("_") or "*" in tool or rest.endswith("_"):
        raise RuleError("an MCP rule is mcp__SERVER or mcp__SERVER__TOOL")
    if pattern is not None:
        raise RuleError("an MCP tool takes no pattern: name the tool (mcp__SERVER__TOOL) or the server")
    return Rule(text=text, tool=tool)


def split_rules(value: str) -> tuple[list[str], bool]:
    """Comma-separated rules (a comma inside parentheses belongs to its pattern), and whether
    every parenthesis was closed."""
    items: list[str] = []
    depth = 0
    start = 0
    for i, c in enumerate(value):
        if c == "(":
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
        elif c == "," and depth == 0:
            items.append(value[start:i])
            start = i + 1
    items.append(value[start:])
    return items, depth == 0


def parse_rule_list(
    value: str, *, what: str = "--allow-tools", tools: ToolRegistry = BUILTIN_TOOLS
) -> tuple[Rule, ...]:
    """A comma-separated list of rules (a comma inside parentheses belongs to its pattern):
    ``"bash(git commit -m a,b:*), edit_file"``. ValueError (one line) names every bad one."""
    items, balanced = split_rules(value)
    if not balanced:
        raise ValueError(f"{what}: unbalanced parentheses in {value!r}")
    rules: list[Rule] = []
    bad: list[str] = []
    for item in items:
        if not item.strip():
            continue
        try:
            rules.append(parse_rule(item, tools))
        except RuleError as e:
            bad.append(f"{item.strip()!r}: {e}")
    if bad:
        raise ValueError(f"{what}: {'; '.join(bad)}")
    return tuple(rules)


# -- deciding ---------------------------------------------------------------------------------


def default_decision(name: str, tools: ToolRegistry = BUILTIN_TOOLS) -> Decision:
    """Without a matching rule: a tool that asks (writing, executing, every MCP tool) asks, the
    rest run."""
    tool = tools.get(name)
    asks = tool.asks if tool is not None else name.startswith("mcp__")
    return "ask" if asks else "allow"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def path_forms(workspace: Path, raw: object) -> tuple[tuple[str, ...], bool]:
    """The workspace-relative forms of a tool's path (as written, ``..`` collapsed, and where it
    really is), and whether an allow may match it (relative, and both forms inside)."""
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        return (), False
    ws = os.path.realpath(workspace)
    joined = raw if os.path.isabs(raw) else os.path.join(ws, raw)
    lexical = os.path.normpath(joined)
    real = os.path.realpath(joined)
    forms: list[str] = []
    for p in (lexical, real):
        if _inside(p, ws) and p != ws:
            rel = Path(os.path.relpath(p, ws)).as_posix()
            if rel not in forms:
                forms.append(rel)
    may_allow = not os.path.isabs(raw) and _inside(lexical, ws) and _inside(real, ws) and lexical != ws
    return tuple(forms), may_allow


def rule_touches(
    rule: Rule, name: str, tool_input: object, workspace: Path, tools: ToolRegistry = BUILTIN_TOOLS
) -> bool:
    """Whether ``rule`` names this call (its input as sent) as a deny rule would: the tool, and
    for a pattern any simple command of it (or a command not fully parsed, which might hide one)
    or any form of its path. Hook matchers use it."""
    if not rule.covers_tool(name):
        return False
    if rule.pattern is None:
        return True
    target = tools.target_of(name, tool_input)
    if target is None:
        return False
    if target.kind == "command":
        parsed = split_command(target.value)
        return parsed.problem is not None or any(rule.matches_part(p, tightening=True) for p in parsed.parts)
    if target.kind == "domain":
        key = host_key(target.value)
        return key is not None and rule.matches_host(key)
    forms, _ = path_forms(workspace, target.value)
    return any(rule.matches_path(f) for f in forms)


class PermissionRules(BaseModel):
    """The rules in force, with what was refused (``problems``, one line each) and the project's
    allow rules that wait for trust (``waiting``, and ``pending_trust`` to ask about them); the
    permission ``mode`` the project's files set and may set now, and the file (``mode_source``).
    Read with ``app.agent.permissions.loading.load_permission_rules``."""

    model_config = ConfigDict(frozen=True)

    workspace: Path
    rules: tuple[SourcedRule, ...] = ()
    waiting: tuple[SourcedRule, ...] = ()
    problems: tuple[str, ...] = ()
    pending_trust: PendingTrust | None = None
    mode: PermissionMode | None = None
    mode_source: str = ""

    def with_rules(
        self, rules: Iterable[Rule], *, scope: Scope, source: str, list_name: ListName = "allow"
    ) -> PermissionRules:
        """These rules added (``--allow-tools``, a custom command's ``allowed-tools``)."""
        extra = tuple(SourcedRule(rule=r, list=list_name, scope=scope, source=source) for r in rules)
        return self.model_copy(update={"rules": self.rules + extra})

    def listing(self) -> tuple[tuple[SourcedRule, str], ...]:
        """Every rule with its state (``active`` or ``waiting for trust``), deny first, for
        ``/permissions``."""
        out = [(r, "active") for r in self.rules] + [(r, "waiting for trust") for r in self.waiting]
        return tuple(sorted(out, key=lambda x: LISTS.index(x[0].list)))

    def _of(self, name: str, list_name: ListName) -> list[SourcedRule]:
        return [r for r in self.rules if r.list == list_name and r.rule.covers_tool(name)]

    def decide(
        self, name: str, target: RuleTarget | None = None, default: Decision | None = None
    ) -> RuleDecision:
        """allow / ask / deny for a call of ``name`` whose patterns match ``target``, with the rule
        that decided and a one-line reason; no rule: ``default`` (None: ``default_decision``)."""
        fallback = default if default is not None else default_decision(name)
        if target is not None and target.kind == "command":
            return self._decide_command(name, target.value, fallback)
        if target is not None and target.kind == "domain":
            return self._decide_host(name, host_key(target.value), fallback)
        forms, may_allow = path_forms(self.workspace, target.value) if target is not None else ((), False)
        tightening: tuple[ListName, ...] = ("deny", "ask")
        for list_name in tightening:
            for r in self._of(name, list_name):
                if r.rule.pattern is None or any(r.rule.matches_path(f) for f in forms):
                    return _decided(list_name, name, r)
        for r in self._of(name, "allow"):
            if r.rule.pattern is None or (may_allow and forms and all(r.rule.matches_path(f) for f in forms)):
                return _decided("allow", name, r)
        return RuleDecision(decision=fallback, reason=f"no rule matches this {name} call")

    def _decide_host(self, name: str, key: str | None, fallback: Decision) -> RuleDecision:
        for list_name in LISTS:
            for r in self._of(name, list_name):
                if r.rule.pattern is None or (key is not None and r.rule.matches_host(key)):
                    return _decided(list_name, name, r)
        return RuleDecision(decision=fallback, reason=f"no rule matches this {name} call")

    def names_host(self, name: str, host: str) -> bool:
        """Whether an allow rule in force names exactly this host for the tool ``name``
        (``web_fetch(domain:127.0.0.1)``), and no deny rule covers it: what a loopback, private or
        link-local host needs. Neither a wildcard nor the bare rule names a host."""
        key = host_key(host)
        if key is None or self._decide_host(name, key, "ask").decision == "deny":
            return False
        return any(
            r.rule.pattern is not None and r.rule.matches_host(key, exactly=True)
            for r in self._of(name, "allow")
        )

    def _decide_command(self, name: str, command: str, fallback: Decision) -> RuleDecision:
        deny, ask, allow = self._of(name, "deny"), self._of(name, "ask"), self._of(name, "allow")
        for r in deny:
            if r.rule.pattern is None:
                return _decided("deny", name, r)
        parsed = split_command(command)
        checks: tuple[tuple[ListName, list[SourcedRule]], ...] = (("deny", deny), ("ask", ask))
        for list_name, rules in checks:
            for r in rules:
                if r.rule.pattern is None or any(
                    r.rule.matches_part(p, tightening=True) for p in parsed.parts
                ):
                    return _decided(list_name, name, r)
        bare = next((r for r in allow if r.rule.pattern is None), None)
        guarded = any(r.rule.pattern is not None for r in deny + ask)
        if parsed.problem is not None:
            # Rules cannot see all of it: a deny or ask rule might have matched what is hidden.
            if bare is not None and not guarded:
                return _decided("allow", name, bare)
            return RuleDecision(decision="ask", reason=f"the command holds {parsed.problem}")
        if bare is not None:
            return _decided("allow", name, bare)
        if allow and parsed.parts:
            if any(p.writes_file for p in parsed.parts):
                return RuleDecision(
                    decision=fallback,
                    reason="the command redirects output to a file: a rule never allows that",
                )
            hits = [next((r for r in allow if r.rule.matches_part(p)), None) for p in parsed.parts]
            first = hits[0]
            if first is not None and all(h is not None for h in hits):
                return _decided("allow", name, first)
            if any(h is None and p.command_words != p.words for p, h in zip(parsed.parts, hits, strict=True)):
                return RuleDecision(
                    decision=fallback,
                    reason="the command starts with NAME=value: a rule never allows that",
                )
            unnamed = [
                str(x) for p, h in zip(parsed.parts, hits, strict=True) if h is None for x in p.redirections
            ]
            if unnamed:
                return RuleDecision(
                    decision=fallback,
                    reason=(f"the command redirects ({' '.join(unnamed)}): no rule names that redirection"),
                )
            if len(parsed.parts) > 1:
                return RuleDecision(decision=fallback, reason="not every command in it is allowed by a rule")
        return RuleDecision(decision=fallback, reason=f"no rule matches this {name} call")


def _decided(list_name: ListName, name: str, r: SourcedRule) -> RuleDecision:
    if list_name == "deny":
        reason = f"{name} was denied by the rule {r.rule.text} in {r.source}"
    elif list_name == "ask":
        reason = f"the rule {r.rule.text} in {r.source} asks for this {name} call"
    else:
        reason = f"allowed by the rule {r.rule.text} in {r.source}"
    return RuleDecision(decision=list_name, reason=reason, rule=r)
