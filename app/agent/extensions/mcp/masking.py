"""The secrets a server was given, masked wherever what the server says is shown.

A stdio server gets its ``env`` values, an HTTP server's requests carry its ``headers``: tokens,
more often than not. What a server says back (its stderr's last line, an error it reports, a
line that is not MCP, a log line of the SDK about it) can hold them, as a server that prints its
environment while it fails does. Each configured value, as written and as expanded, is shown as
``***`` in every reason, error and log line of that server: in ``/mcp``, the chat, print mode's
stderr. A value shorter than :data:`MIN_SECRET_CHARS` is left as it is: a ``1`` or ``on`` is no
secret, and masking it would garble every line ("exited (code ***)").

A tool's successful result is not masked: it is the tool's answer, whole, as the person asked.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from contextlib import suppress

from app.agent.extensions.mcp.config import HttpServer, ServerConfig, UnsetVariableError, expand

__all__ = ["MASK", "MIN_SECRET_CHARS", "SDK_LOGS", "SecretMask", "guard_sdk_logs", "secrets_of"]

MASK = "***"
MIN_SECRET_CHARS = 4

_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")
_SCHEME_RE = re.compile(r"(?:Bearer|Basic|Token|Bot|Digest|ApiKey)\s+(.+)", re.IGNORECASE | re.DOTALL)


class SecretMask:
    """``mask(text)``: ``text`` with every one of ``values`` replaced by :data:`MASK` (the
    longest first, so a value inside another is masked whole). Apply it before a text is cut
    to a line's length: a secret cut in half is half shown."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        kept = {v for v in values if len(v.strip()) >= MIN_SECRET_CHARS}
        self.values = tuple(sorted(kept, key=lambda v: (-len(v), v)))
        self._re = re.compile("|".join(map(re.escape, self.values))) if self.values else None

    def __call__(self, text: str) -> str:
        return self._re.sub(MASK, text) if self._re is not None else text

    def __bool__(self) -> bool:
        return self._re is not None


def _forms(value: str, environ: Mapping[str, str]) -> list[str]:
    """A configured value as written, as expanded (when every variable it names is set), and
    the value of each variable it names."""
    forms = [value]
    with suppress(UnsetVariableError):
        forms.append(expand(value, environ))
    forms += [environ[m.group(1)] for m in _VAR_RE.finditer(value) if environ.get(m.group(1))]
    # A credential after its scheme word ("Bearer abc…") is masked also when shown alone.
    forms += [m.group(1) for f in list(forms) if (m := _SCHEME_RE.fullmatch(f.strip()))]
    return [f for f in forms if not _VAR_RE.fullmatch(f)]


def secrets_of(server: ServerConfig, environ: Mapping[str, str] | None = None) -> SecretMask:
    """The mask of ``server``: its ``env`` values (stdio) or its header values (HTTP), read
    with ``environ`` (default: the process's, as the server's own expansion reads it)."""
    env = os.environ if environ is None else environ
    pairs = server.headers if isinstance(server, HttpServer) else server.env
    return SecretMask(form for _, value in pairs for form in _forms(value, env))


class _SdkLogMask(logging.Filter):
    """Masks the SDK's log records with the masks of the servers running now."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._masks: dict[int, SecretMask] = {}

    def add(self, mask: SecretMask) -> None:
        with self._lock:
            self._masks[id(mask)] = mask

    def discard(self, mask: SecretMask) -> None:
        with self._lock:
            self._masks.pop(id(mask), None)

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            masks = list(self._masks.values())
        if not masks:
            return True
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            # The exception's message can quote the server: said, masked, as one more line.
            text += f"\n{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        masked = text
        for mask in masks:
            masked = mask(masked)
        if masked != text:
            record.msg, record.args, record.exc_info, record.exc_text = masked, (), None, None
        return True


SDK_LOGS = _SdkLogMask()


def guard_sdk_logs() -> None:
    """Put the mask on every logger of the SDK there is now (a logger's filter applies to what
    is logged on it, not to its children's records: so each one; idempotent)."""
    for name in list(logging.root.manager.loggerDict):
        if name == "mcp" or name.startswith("mcp."):
            logger = logging.getLogger(name)
            if SDK_LOGS not in logger.filters:
                logger.addFilter(SDK_LOGS)
