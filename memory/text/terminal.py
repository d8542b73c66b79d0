"""Text safe to show on a terminal, and the characters that are not.

``strip_terminal`` is the one filter for text shown on a terminal (print mode, the CLI, the app):
model, tool and card text is hostile, so whole escape sequences go and then every control, bidi
or invisible character. ``TerminalStreamStripper`` does the same for a stream that arrives in
chunks; ``line_count`` and ``split_lines`` are the one way lines are counted. Nothing here
touches the disk.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "BIDI",
    "ESCAPE_SEQUENCE_RE",
    "ZERO_WIDTH",
    "TerminalStreamStripper",
    "is_strict_utf8",
    "is_unsafe_char",
    "line_count",
    "split_lines",
    "strip_escape_sequences",
    "strip_terminal",
    "strip_terminal_deep",
]

# Bidi and zero-width characters are all in category Cf; they are listed so the intent is
# explicit and checked by the tests even if a future Unicode version reclassified one.
BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff")


def is_unsafe_char(c: str) -> bool:
    """Control (Cc), format (Cf: bidi, zero-width, tag characters), line/paragraph separators
    and surrogates: characters that can hide text or inject structure into one line."""
    if c in BIDI or c in ZERO_WIDTH:
        return True
    return unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")


def is_strict_utf8(s: str) -> bool:
    """False when ``s`` holds a lone surrogate (it could not be written as UTF-8)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# Whole escape sequences, so no remnant such as "[31m" survives (ECMA-48, 7-bit and C1 forms):
# - CSI: ESC [ or 0x9B, parameter bytes, intermediate bytes, a final byte (cut-off: what is there);
# - control strings OSC/DCS/SOS/PM/APC (ESC ] P X ^ _ or 0x9D 0x90 0x98 0x9E 0x9F) up to BEL or
#   ST (ESC \ or 0x9C). One without a terminator ends at the end of its line: its payload (a
#   title, clipboard data, a link target) is never shown, and the next lines stay visible;
# - any other ESC with its intermediate and final bytes (ESC c, ESC ( B, ESC 7).
_TERMINAL_SEQ_RE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
# The same pattern for those who mark where sequences are (memory.text.markup) rather than drop them.
ESCAPE_SEQUENCE_RE = _TERMINAL_SEQ_RE
# Joiners that scripts and emoji sequences need; harmless on a terminal.
_DISPLAY_KEEP = frozenset("\u200c\u200d")


# Characters worth a closer look: all but printable ASCII, tab and newline.
_DISPLAY_CANDIDATE_RE = re.compile(r"[^\x20-\x7e\t\n]")


def strip_escape_sequences(text: str) -> str:
    """Whole terminal escape sequences removed, nothing else (see ``_TERMINAL_SEQ_RE``)."""
    return _TERMINAL_SEQ_RE.sub("", text)


def strip_terminal(text: str, *, keep_newlines: bool = True) -> str:
    """Text safe to show on a terminal: whole CSI/OSC/DCS/SOS/PM/APC sequences removed, then
    every other control, bidi or invisible character. Tabs are kept; line breaks (``\\r\\n``,
    ``\\r``, U+2028/2029 become ``\\n``) are kept, or each becomes a space with
    ``keep_newlines=False``. One function for print mode, the CLI and the app (model, tool and
    card text is hostile)."""
    if not text:
        return text
    text = strip_escape_sequences(text)
    newline = "\n" if keep_newlines else " "
    if "\r" in text:
        # A bare CR would let a later part overwrite an earlier one on screen: a line break.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not keep_newlines:
        text = text.replace("\n", " ")
    # One table built from the distinct suspicious characters: fast on large tool output.
    table: dict[int, str | None] = {}
    for c in set(_DISPLAY_CANDIDATE_RE.findall(text)):
        if c in "\u2028\u2029":
            table[ord(c)] = newline
        elif c not in _DISPLAY_KEEP and is_unsafe_char(c):
            table[ord(c)] = None
    return text.translate(table) if table else text


def strip_terminal_deep(value: object) -> object:
    """A JSON-like value (tool arguments) with terminal sequences removed from every string, keys included."""
    if isinstance(value, str):
        return strip_terminal(value)
    if isinstance(value, list):
        return [strip_terminal_deep(v) for v in value]
    if isinstance(value, dict):
        return {strip_terminal(str(k)): strip_terminal_deep(v) for k, v in value.items()}
    return value


_LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")


def line_count(text: str) -> int:
    """How many lines a file's text has, as an editor shows it: CR LF, LF and a lone CR each
    end a line; a line break at the very end starts no further line ("" has none). The one
    count for every place that says how long a text is (a write's dialog, its tool block)."""
    if not text:
        return 0
    breaks = text.count("\n") + text.count("\r") - text.count("\r\n")
    return breaks + (0 if text[-1] in "\r\n" else 1)


def split_lines(text: str) -> list[str]:
    """The lines ``line_count`` counts, without their line breaks."""
    lines = _LINE_BREAK_RE.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


# The characters an escape sequence starts with (see ``_TERMINAL_SEQ_RE``).
_ESCAPE_STARTS = frozenset("\x1b\x9b\x90\x98\x9d\x9e\x9f")
# A sequence that may still be growing at the end of a chunk, by kind: what has to be kept of it
# for the next chunk to be read exactly as the whole text would be (its payload never is).
_CSI_OPENERS = ("\x1b[", "\x9b")
_STRING_OPENERS = ("\x1b]", "\x1bP", "\x1bX", "\x1b^", "\x1b_", "\x90", "\x98", "\x9d", "\x9e", "\x9f")


def _held_state(seq: str) -> str:
    """The shortest text that a following chunk continues exactly as it would continue ``seq``
    (one escape sequence that reaches the end of the text received so far): its opener, plus one
    intermediate byte when it has reached those; "" when ``seq`` cannot grow any more."""
    for opener in _CSI_OPENERS:
        if seq.startswith(opener):
            body = seq[len(opener) :]
            if body and "@" <= body[-1] <= "~":
                return ""  # the final byte arrived
            return opener + (" " if any(" " <= c <= "/" for c in body) else "")
    for opener in _STRING_OPENERS:
        if seq.startswith(opener):
            if seq.endswith(("\x07", "\x9c", "\x1b\\")) and len(seq) > len(opener):
                return ""  # terminated
            return opener  # the payload seen so far is dropped: the whole of it never shows
    body = seq[1:]
    if body and "0" <= body[-1] <= "~":
        return ""
    return "\x1b" + (" " if body else "")


class TerminalStreamStripper:
    """``strip_terminal`` over a text that arrives in chunks (a streamed answer).

    Stripping each chunk alone leaves the tail of a sequence cut between two chunks on screen
    (``]52;c;…``, ``5mblink``). ``feed`` returns what can be shown now and holds back the start
    of a sequence still open at the chunk's end (CSI up to its final byte; OSC/DCS/SOS/PM/APC up
    to BEL or ST; their 8-bit C1 forms; a lone ESC) and a trailing CR (half of a CR LF);
    ``flush`` ends the stream. The concatenated output over any split of a text equals
    ``strip_terminal`` of the whole text. What is held is bounded: at most an opener and one
    intermediate byte — a control string's payload is dropped as it arrives, however long it
    runs unterminated — and one CR.
    """

    def __init__(self, *, keep_newlines: bool = True) -> None:
        self.keep_newlines = keep_newlines
        self._held = ""  # the state of an escape sequence open at the end of the last chunk
        self._cr = False  # the text so far ended with CR: the next character decides what it is

    @property
    def holding(self) -> bool:
        """Whether anything is held back (an open sequence or a trailing CR)."""
        return bool(self._held) or self._cr

    def feed(self, chunk: str) -> str:
        """The part of ``chunk`` (with what was held) that can be shown now, stripped."""
        if not chunk:
            return ""
        text = self._held + chunk
        self._held = ""
        cut = len(text)
        if any(c in text for c in _ESCAPE_STARTS):
            last = None
            for m in _TERMINAL_SEQ_RE.finditer(text):
                last = m
            if last is not None and last.end() == len(text):
                # It might go on in the next chunk: only its state is kept.
                cut = last.start()
                self._held = _held_state(text[cut:])
        return self._emit(strip_escape_sequences(text[:cut]), final=False)

    def flush(self) -> str:
        """The end of the stream: what was held, stripped (an open sequence shows nothing)."""
        self._held = ""
        return self._emit("", final=True)

    def _emit(self, text: str, *, final: bool) -> str:
        if self._cr:
            text = "\r" + text
            self._cr = False
        if not final and text.endswith("\r"):
            text = text[:-1]
            self._cr = True
        return strip_terminal(text, keep_newlines=self.keep_newlines)
