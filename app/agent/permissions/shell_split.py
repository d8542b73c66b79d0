"""Splitting a bash command line into the simple commands a permission rule is matched against.

Deliberately small: it understands words, quotes, the list and pipe operators and redirections,
and marks everything else as not understood rather than guessing. A rule allows a command only
when every part of it was understood; a part it saw can still be denied.

- Separators (outside quotes): ``&&``, ``||``, ``;``, ``;;``, ``|``, ``|&``, ``&``, newlines, and
  ``(`` / ``)`` (subshells and groups: the commands inside still count one by one).
- Words: ``'…'`` is literal, ``"…"`` is literal except for ``\\`` escapes, ``\\x`` outside quotes
  is ``x``; words are compared after removing the quotes (``g"it" status`` is ``git status``).
  ``$NAME`` and ``${NAME}`` stay as written. ``#`` at the start of a word starts a comment.
- Leading reserved words ``! { } if then elif else fi while until do done time`` introduce the
  command after them and are dropped (``if rm x; then …`` has the part ``rm x``).
- Redirections are kept with their part (``redirections``, each with its fd, operator and target,
  the default fd left out: ``1>&2`` is ``>&2``, ``< x`` is ``<x``), so a rule can tell ``sh`` from
  ``sh < evil.sh``. An output redirection (``>``, ``>>``, ``>|``, ``&>``, ``&>>``, ``<>``, ``>&``
  to a name) to anything but ``/dev/null``, ``/dev/stdout`` or ``/dev/stderr`` also marks the part
  as writing a file.
- Not understood (``problem`` says which, one line): command substitution ``$(…)`` and
  backticks, process substitution ``<(…)`` / ``>(…)``, arithmetic ``$((…))``, ``${…}`` other
  than a plain name, ``$'…'`` and ``$"…"`` quoting, heredocs and herestrings (``<<``, ``<<<``),
  a line continuation (backslash-newline), an unclosed quote, and the keywords ``for``,
  ``case``, ``select``, ``function``, ``coproc``. Parts after a substitution are still read (so
  a denied command beside it is still denied); parsing stops at the others.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ParsedCommand", "Redirection", "SimpleCommand", "split_command"]

_RESERVED_LEADING = frozenset(
    {"!", "{", "}", "if", "then", "elif", "else", "fi", "while", "until", "do", "done", "time"}
)
_UNPARSED_KEYWORDS = frozenset({"for", "case", "select", "function", "coproc", "esac", "in"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!-]")
_BLANK = " \t"  # bash's blanks: a carriage return is part of a word


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=.*", re.DOTALL)


# The fd an operator acts on when none is written before it.
_DEFAULT_FD = {"<": "0", "<&": "0", "<>": "0", ">": "1", ">>": "1", ">|": "1", ">&": "1"}


@dataclass(frozen=True)
class Redirection:
    """One redirection as the shell reads it: ``fd`` ("" when the operator's default), the
    operator, and the target word with its quotes removed."""

    fd: str
    op: str
    target: str

    @classmethod
    def of(cls, fd: str, op: str, target: str) -> Redirection:
        return cls("" if fd == _DEFAULT_FD.get(op) else fd, op, target)

    def __str__(self) -> str:
        return f"{self.fd}{self.op}{self.target}"


@dataclass(frozen=True)
class SimpleCommand:
    words: tuple[str, ...]  # quotes removed, reserved leading words dropped
    writes_file: bool = False  # an output redirection to a file
    redirections: tuple[Redirection, ...] = ()  # in the order written

    @property
    def command_words(self) -> tuple[str, ...]:
        """The words without leading ``NAME=value`` assignments (the command they set up)."""
        i = 0
        while i < len(self.words) and _ASSIGNMENT.fullmatch(self.words[i]):
            i += 1
        return self.words[i:]


@dataclass(frozen=True)
class ParsedCommand:
    parts: tuple[SimpleCommand, ...]
    # Why the command is not fully understood (one line); None when it is.
    problem: str | None = None


class _Stop(Exception):
    """Parsing cannot go on: the problem is fatal for the rest of the line."""


class _Scanner:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.parts: list[SimpleCommand] = []
        self.words: list[str] = []
        self.writes = False
        self.redirs: list[Redirection] = []
        self.word: list[str] = []
        self.in_word = False
        self.word_quoted = False
        self.problem: str | None = None

    # -- results ------------------------------------------------------------------------------

    def note(self, problem: str) -> None:
        if self.problem is None:
            self.problem = problem

    def end_word(self) -> None:
        if self.in_word:
            text = "".join(self.word)
            if not self.words and not self.word_quoted and text in _UNPARSED_KEYWORDS:
                self.note(f"the shell keyword '{text}' is not parsed")
            if not self.words and not self.word_quoted and text in _RESERVED_LEADING:
                pass  # introduces the command that follows
            else:
                self.words.append(text)
        self.word = []
        self.in_word = False
        self.word_quoted = False

    def end_part(self) -> None:
        self.end_word()
        if self.words or self.redirs:
            self.parts.append(SimpleCommand(tuple(self.words), self.writes, tuple(self.redirs)))
        self.words = []
        self.writes = False
        self.redirs = []

    # -- pieces -------------------------------------------------------------------------------

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def skip_balanced(self, opener: str, closer: str) -> None:
        """Past a ``$(…)``-like group whose opener was just consumed (quotes respected)."""
        depth = 1
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "\\":
                self.i += 2
                continue
            if c == "'":
                end = self.s.find("'", self.i + 1)
                if end < 0:
                    raise _Stop("an unclosed quote")
                self.i = end + 1
                continue
            if c == '"':
                self.i += 1
                self.double_quoted(collect=False)
                continue
            if c == opener:
                depth += 1
            elif c == closer:
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return
            self.i += 1
        raise _Stop("an unclosed substitution")

    def skip_backticks(self) -> None:
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "\\":
                self.i += 2
                continue
            self.i += 1
            if c == "`":
                return
        raise _Stop("an unclosed backtick")

    def dollar(self, out: list[str] | None, in_quotes: bool = False) -> None:
        """At a ``$`` (outside single quotes): a substitution, a parameter or a literal ``$``."""
        nxt = self.peek(1)
        if nxt == "(":
            arithmetic = self.peek(2) == "("
            self.note(
                "arithmetic expansion $((…)) is not parsed"
                if arithmetic
                else "a command substitution $(…): a rule never allows one"
            )
            self.i += 2
            self.skip_balanced("(", ")")
            if out is not None:
                out.append("$(…)")
            return
        if nxt == "{":
            end = self.s.find("}", self.i + 2)
            inner = self.s[self.i + 2 : end] if end >= 0 else ""
            if end < 0 or not _NAME.fullmatch(inner):
                raise _Stop("a parameter expansion ${…} other than a plain ${NAME} is not parsed")
            if out is not None:
                out.append(self.s[self.i : end + 1])
            self.i = end + 1
            return
        if nxt in ("'", '"') and not in_quotes:
            raise _Stop(f"the quoting ${nxt}…{nxt} is not parsed")
        if out is not None:
            out.append("$")
        self.i += 1

    def double_quoted(self, collect: bool = True) -> None:
        """From just after an opening ``"`` to just after its closing one."""
        out = self.word if collect else None
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\":
                nxt = self.peek(1)
                if nxt == "\n":
                    raise _Stop("a line continuation (backslash-newline) is not parsed")
                if nxt in ('"', "\\", "$", "`"):
                    if out is not None:
                        out.append(nxt)
                    self.i += 2
                    continue
                if out is not None:
                    out.append("\\")
                self.i += 1
                continue
            if c == "`":
                self.note("a command substitution `…`: a rule never allows one")
                self.i += 1
                self.skip_backticks()
                if out is not None:
                    out.append("`…`")
                continue
            if c == "$":
                self.dollar(out, in_quotes=True)
                continue
            if out is not None:
                out.append(c)
            self.i += 1
        raise _Stop("an unclosed quote")

    def target(self) -> str:
        """The word after a redirection operator (blanks skipped first)."""
        while self.peek() in _BLANK and self.peek():
            self.i += 1
        saved_parts, saved_words = self.words, self.word
        self.words, self.word, self.in_word = [], [], False
        self.word_loop(stop_at_blank=True)
        text = "".join(self.word)
        if not self.in_word:
            raise _Stop("a redirection without a target")
        self.words, self.word, self.in_word, self.word_quoted = saved_parts, saved_words, False, False
        return text

    def redirection(self) -> None:
        """At ``<``, ``>`` or ``&>`` (outside quotes); a digit-only word right before ``<`` or
        ``>`` is its fd (before ``&>`` it stays a word, as in bash)."""
        s = self.s[self.i :]
        fd = ""
        if self.in_word and not self.word_quoted and "".join(self.word).isdigit() and not s.startswith("&"):
            fd = "".join(self.word)
            self.word, self.in_word = [], False  # the fd number, not a word
        else:
            self.end_word()
        if s.startswith(("<(", ">(")):
            self.note("a process substitution <(…) or >(…): a rule never allows one")
            self.i += 2
            self.skip_balanced("(", ")")
            self.words.append("<(…)")
            return
        if s.startswith("<<"):
            raise _Stop("a heredoc or herestring (<<) is not parsed")
        op = ""
        for op in ("&>>", "&>", ">>", ">|", ">&", "<&", "<>", ">", "<"):
            if s.startswith(op):
                self.i += len(op)
                break
        target = self.target()
        self.redirs.append(Redirection.of(fd, op, target))
        if op in (">&", "<&") and (target.isdigit() or target == "-"):
            return
        if op == "<":
            return
        if target not in _HARMLESS_TARGETS:
            self.writes = True

    def word_loop(self, stop_at_blank: bool = False) -> None:
        """Read characters into the current word until a blank or an operator."""
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in _BLANK or c in "\n;|&()<>":
                return
            if c == "#" and not self.in_word:
                if stop_at_blank:
                    return
                end = self.s.find("\n", self.i)
                self.i = len(self.s) if end < 0 else end
                return
            self.in_word = True
            if c == "\\":
                nxt = self.peek(1)
                if nxt == "\n":
                    raise _Stop("a line continuation (backslash-newline) is not parsed")
                if nxt == "":
                    raise _Stop("a backslash at the end of the command")
                self.word.append(nxt)
                self.word_quoted = True
                self.i += 2
            elif c == "'":
                end = self.s.find("'", self.i + 1)
                if end < 0:
                    raise _Stop("an unclosed quote")
                self.word.append(self.s[self.i + 1 : end])
                self.word_quoted = True
                self.i = end + 1
            elif c == '"':
                self.word_quoted = True
                self.i += 1
                self.double_quoted()
            elif c == "`":
                self.note("a command substitution `…`: a rule never allows one")
                self.i += 1
                self.skip_backticks()
                self.word.append("`…`")
            elif c == "$":
                self.dollar(self.word)
            else:
                self.word.append(c)
                self.i += 1

    def run(self) -> None:
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in _BLANK:
                self.end_word()
                self.i += 1
            elif c in "\n;()":
                self.end_part()
                self.i += 1
            elif c == "|":
                self.end_part()
                self.i += 2 if self.peek(1) in ("|", "&") else 1
            elif c == "&":
                if self.peek(1) == ">":
                    self.redirection()
                else:
                    self.end_part()
                    self.i += 2 if self.peek(1) == "&" else 1
            elif c in "<>":
                self.redirection()
            else:
                self.word_loop()
        self.end_part()


def split_command(text: str) -> ParsedCommand:
    """``text``'s simple commands, and why it is not fully understood (None: it is)."""
    scanner = _Scanner(text)
    try:
        scanner.run()
    except _Stop as stop:
        scanner.end_part()
        return ParsedCommand(tuple(scanner.parts), str(stop))
    return ParsedCommand(tuple(scanner.parts), scanner.problem)
