"""What an "always allow" proposes to remember for a call, and what it will not remember.

A bash command is proposed part by part, each part as the exact command it is (its words and the
redirections it holds, nothing widened into a ``:*`` prefix: a person may still edit it into one).
A part is never proposed when remembering it would let something new run later under the same
rule: a shell or interpreter (it runs whatever script or input it is given: ``sh``, ``python3.12``,
``/bin/bash``, ``busybox sh``, ``env sh``), a program that runs another command (``sudo``,
``xargs``, ``env``, ``timeout``…), a script run by its name (``./deploy.sh``), a word that
expands a variable, a leading ``NAME=value``, or a redirection that writes a file. Those parts are
named with why, so the window can say which parts will still ask.

A web call (a tool whose rules name hosts) is proposed as the exact host it reaches,
``web_fetch(domain:docs.python.org)``: never the bare tool, which would cover every host, nor a
wildcard a person did not write.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from app.agent.permissions.domains import domain_rule
from app.agent.permissions.rules import RuleError, parse_rule, path_forms, split_rules
from app.agent.permissions.shell_split import SimpleCommand, split_command
from app.agent.tools.tool import RuleTarget

__all__ = ["RuleSuggestion", "suggest", "suggest_rules"]

# Programs that run the code they read (a script, stdin, an argument): a rule naming one would
# allow whatever that code becomes. Matched on any word of a part, by the last path component with
# a version suffix removed (``/usr/bin/python3.12`` is ``python``), and on the first word of a
# quoted word or of an option's value (``"python t.py"``, ``core.pager=sh``, ``exec:bash``).
_INTERPRETERS = frozenset(
    {
        "sh",
        "bash",
        "zsh",
        "dash",
        "fish",
        "ksh",
        "mksh",
        "pdksh",
        "ash",
        "csh",
        "tcsh",
        "yash",
        "rc",
        "elvish",
        "nu",
        "xonsh",
        "pwsh",
        "powershell",
        "busybox",
        "toybox",
        "python",
        "pythonw",
        "pypy",
        "ipython",
        "jupyter",
        "node",
        "nodejs",
        "deno",
        "bun",
        "tsx",
        "ts-node",
        "perl",
        "ruby",
        "irb",
        "php",
        "lua",
        "luajit",
        "tclsh",
        "wish",
        "expect",
        "awk",
        "gawk",
        "mawk",
        "nawk",
        "rscript",
        "julia",
        "osascript",
        "groovy",
        "jshell",
        "java",
        "scala",
        "kotlin",
        "swift",
        "elixir",
        "iex",
        "erl",
        "escript",
        "ghci",
        "runghc",
        "runhaskell",
        "guile",
        "racket",
        "sbcl",
        "clisp",
        "ocaml",
        "vi",
        "vim",
        "nvim",
        "emacs",
        "ed",
        "ex",
        "gdb",
        "lldb",
        "sqlite",
        "psql",
        "mysql",
        "mariadb",
        "duckdb",
        "dc",
        "m4",
        "tmux",
        "screen",
        "at",
        "batch",
        "crontab",
    }
)
# Programs that run another command (given after them or read from stdin), or change what a
# later word means: matched on the part's program.
_WRAPPERS = frozenset(
    {
        "env",
        "sudo",
        "doas",
        "su",
        "runuser",
        "pkexec",
        "sg",
        "newgrp",
        "xargs",
        "parallel",
        "eval",
        "exec",
        "source",
        ".",
        "command",
        "builtin",
        "enable",
        "hash",
        "alias",
        "trap",
        "nohup",
        "timeout",
        "nice",
        "ionice",
        "chrt",
        "taskset",
        "stdbuf",
        "setsid",
        "unshare",
        "nsenter",
        "chroot",
        "flock",
        "time",
        "watch",
        "strace",
        "ltrace",
        "valgrind",
        "script",
        "ssh",
        "sshpass",
        "firejail",
        "bwrap",
        "proot",
        "fakeroot",
        "faketime",
        "unbuffer",
        "chronic",
        "xvfb-run",
        "dbus-run-session",
        "systemd-run",
        "npx",
        "bunx",
        "pnpx",
        "uvx",
        "pipx",
    }
)
# Options with which an otherwise plain program runs another command.
_RUNS_COMMAND_OPTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_SCRIPT_SUFFIXES = (
    ".sh",
    ".bash",
    ".zsh",
    ".ksh",
    ".fish",
    ".py",
    ".pyw",
    ".pl",
    ".rb",
    ".js",
    ".mjs",
    ".cjs",
    ".ts",
    ".php",
    ".lua",
    ".tcl",
    ".awk",
    ".ps1",
    ".bat",
    ".cmd",
    ".r",
    ".jl",
)
_VERSIONED = re.compile(r"([a-z][a-z+-]*?)[-_.]?\d[\d._]*[a-z]?(?:-dbg)?")
_VALUE_SEPARATORS = re.compile(r"[=,;:|&]")
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:=@%+,-]+")
_GITIGNORE_SPECIAL = re.compile(r"([*?\[\]\\])")


class RuleSuggestion(BaseModel):
    """The rules an "always allow" proposes (``rules``), and the parts of the call no proposed
    rule covers, each as ``part (why)`` (``still_asks``)."""

    model_config = ConfigDict(frozen=True)

    rules: tuple[str, ...] = ()
    still_asks: tuple[str, ...] = ()


def _names(word: str) -> set[str]:
    """The program names a word could be: its last path component, without ``.exe`` and without
    a version (``python3.12``, ``perl5.36``, ``python3-dbg`` are ``python``/``perl``)."""
    base = word.rsplit("/", 1)[-1].lower().removesuffix(".exe")
    names = {base}
    m = _VERSIONED.fullmatch(base)
    if m:
        names.add(m.group(1))
    return names


def _program_words(word: str) -> list[str]:
    """What in ``word`` may name a program: the first word of it and of each value it holds."""
    return [piece.split(None, 1)[0] for piece in _VALUE_SEPARATORS.split(word) if piece.strip()]


def _quote_word(word: str) -> str:
    if word and _PLAIN_WORD.fullmatch(word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def _shown(part: SimpleCommand) -> str:
    """The part as a rule writes it: its words, then its redirections (quoted where needed)."""
    redirections = [f"{r.fd}{r.op}{_quote_word(r.target)}" for r in part.redirections]
    return " ".join([*(_quote_word(w) for w in part.words), *redirections])


def _why_not(part: SimpleCommand) -> str | None:
    """Why remembering ``part`` as a rule would be unsafe, in a few words; None when it is not."""
    if not part.words:
        return "a redirection alone"
    if part.command_words != part.words:
        return "it starts with NAME=value"
    if part.writes_file:
        return "it writes a file by a redirection"
    if _names(part.words[0]) & _WRAPPERS or _RUNS_COMMAND_OPTIONS.intersection(part.words):
        return "it runs another command"
    if any(_names(token) & _INTERPRETERS for word in part.words for token in _program_words(word)):
        return "a shell or interpreter runs whatever it reads"
    if part.words[0].lower().endswith(_SCRIPT_SUFFIXES):
        return "it runs a script, which can change"
    if any("$" in w or "`" in w for w in part.words) or any("$" in r.target for r in part.redirections):
        return "it expands a variable"
    if not _shown(part).isprintable():
        return "it holds a line break or a control character"
    return None


def _round_trips(rule: str, part: SimpleCommand) -> bool:
    """Whether ``rule``, saved and read back, is exactly ``part`` (quotes, parentheses, commas)."""
    items, balanced = split_rules(rule)
    if not balanced or len(items) != 1:
        return False
    try:
        parsed = parse_rule(rule)
    except RuleError:
        return False
    again = split_command(parsed.pattern or "").parts
    return len(again) == 1 and (again[0].words, again[0].redirections) == (part.words, part.redirections)


def _suggest_command(name: str, command: str) -> RuleSuggestion:
    parsed = split_command(command)
    if parsed.problem is not None:
        return RuleSuggestion(still_asks=(f"the whole command (it holds {parsed.problem})",))
    rules: list[str] = []
    still: list[str] = []
    for part in parsed.parts:
        why = _why_not(part)
        if why is None and not _round_trips(f"{name}({_shown(part)})", part):
            why = "it cannot be written as a rule"
        plain = " ".join([*part.words, *map(str, part.redirections)])  # as a person reads it
        entry = f"{plain} ({why})" if why is not None else f"{name}({_shown(part)})"
        target = still if why is not None else rules
        if entry not in target:
            target.append(entry)
    return RuleSuggestion(rules=tuple(rules), still_asks=tuple(still))


def _escape_path(rel: str) -> str:
    escaped = _GITIGNORE_SPECIAL.sub(r"\\\1", rel)
    if escaped.startswith(("#", "!")):
        escaped = "\\" + escaped
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    # Without a '/', a pattern matches at any depth: anchor a top-level file.
    return escaped if "/" in escaped else "/" + escaped


def suggest(name: str, target: RuleTarget | None, workspace: Path) -> RuleSuggestion:
    """What an "always allow" proposes for a call of ``name`` whose rules match ``target``.

    A command (``bash``): each simple command as the exact command it is (``npm run test`` ->
    ``bash(npm run test)``, ``make 2>&1`` -> ``bash(make 2>&1)``), except the parts that are
    unsafe to remember (see the module), which are named in ``still_asks``; a command that is not
    fully parsed (a substitution, a heredoc…) proposes nothing. A path (the file tools): the exact
    workspace-relative path (``edit_file(src/app.py)``, a top-level file anchored:
    ``edit_file(/setup.py)``). A host (``web_fetch``): exactly that host
    (``web_fetch(domain:docs.python.org)``). No target (every other tool): its name."""
    if target is None:
        return RuleSuggestion(rules=(name,))
    if target.kind == "command":
        return _suggest_command(name, target.value)
    if target.kind == "domain":
        rule = domain_rule(name, target.value)
        return RuleSuggestion(rules=(rule,)) if rule else RuleSuggestion(still_asks=("the call (no host)",))
    forms, _ = path_forms(workspace, target.value)
    if not forms:
        return RuleSuggestion()
    return RuleSuggestion(rules=(f"{name}({_escape_path(forms[0])})",))


def suggest_rules(name: str, target: RuleTarget | None, workspace: Path) -> tuple[str, ...]:
    """The rules ``suggest`` proposes, alone."""
    return suggest(name, target, workspace).rules
