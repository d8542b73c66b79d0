"""What endpoints refused, remembered in ``$PSEUDOCLAUDE_HOME/capabilities.json``.

Some Anthropic-compatible endpoints (a gateway, a local server) refuse a feature of the Messages
API: structured output (``output_config``, asked by the memory model) or the server tool
``web_search_20250305`` (asked by ``web_search``'s side request). A refusal is kept per endpoint
(the base URL without credentials, and the model), so a process that makes one request (print
mode) pays the refused request once, not on every run.

The file is 0600 and replaced atomically; a refusal is added under a lock to what the file holds
by then, so two processes do not lose each other's. A damaged file counts as knowing nothing and
is written anew with the next refusal; a person deletes it to try a feature again. Each refusal
has its own list, so a file written before a list existed still reads (the list is empty).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ValidationError

from memory.store.fs import DEFAULT_FS, FS
from memory.store.locks import file_lock
from memory.store.paths import pseudoclaude_home

log = logging.getLogger(__name__)

__all__ = [
    "CAPABILITIES_FILE",
    "Capabilities",
    "CapabilitiesRecord",
    "Feature",
    "RefusedEndpoint",
    "endpoint_url",
    "refusal_naming",
]

CAPABILITIES_FILE = "capabilities.json"
_CAPABILITIES_MAX_BYTES = 1 << 20  # a file this large is not ours: read as damaged
_LOCK_TIMEOUT = 5.0  # seconds; past it the refusal is simply not remembered (paid once more)


class Feature(StrEnum):
    """A feature an endpoint may refuse; its value names its list in the file."""

    STRUCTURED_OUTPUT = "refused_structured_output"
    WEB_SEARCH = "refused_web_search"


class RefusedEndpoint(BaseModel):
    base_url: str
    model: str
    since: str  # RFC 3339 UTC: when the refusal was first seen


class CapabilitiesRecord(BaseModel):
    """The contents of ``capabilities.json``."""

    version: int = 1
    refused_structured_output: list[RefusedEndpoint] = []
    refused_web_search: list[RefusedEndpoint] = []

    def refused(self, feature: Feature) -> list[RefusedEndpoint]:
        entries: list[RefusedEndpoint] = getattr(self, feature.value)
        return entries


def endpoint_url(base_url: str) -> str:
    """The base URL as it is remembered: without ``user:password@``, query or fragment (a file
    under the home must never hold a credential), and without a trailing slash."""
    try:
        parts = urlsplit(str(base_url).strip())
    except ValueError:
        return ""
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme.lower(), netloc.lower(), parts.path.rstrip("/"), "", ""))


def refusal_naming(err: BaseException, named: re.Pattern[str], field: str) -> bool:
    """Whether an API error is the endpoint refusing one part of the request, recognised from the
    error's structure only: a 400 (or a validator's 422) whose error type, when given, is
    ``invalid_request_error`` and whose ``param`` (matched whole by ``named``), FastAPI-style
    validation ``loc`` (holding ``field``) or message (searched with ``named``) names that part.
    Any other refusal (a bad message, an unknown model's 404) is the request's own error."""
    if getattr(err, "status_code", None) not in (400, 422):
        return False
    body = getattr(err, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = body if isinstance(body, dict) else {}
    kind = error.get("type")
    if kind not in (None, "invalid_request_error"):
        return False
    param = error.get("param")
    if isinstance(param, str) and named.fullmatch(param.strip()):
        return True
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, list):  # FastAPI-style validation: [{"loc": ["body", "output_config"], ...}]
        for item in detail:
            loc = item.get("loc") if isinstance(item, dict) else None
            if isinstance(loc, list) and field in loc:
                return True
    # A plain-text body (some proxies) is the message itself.
    message = body if isinstance(body, str) else error.get("message")
    return isinstance(message, str) and bool(named.search(message))


class Capabilities:
    """What endpoints refused, kept in one small JSON file. Blocking: call from a thread.

    Read once per instance (a new process, or a new runtime, reads the file again)."""

    def __init__(self, path: Path, fs: FS = DEFAULT_FS) -> None:
        self.path = Path(path)
        self.fs = fs
        self._refused: dict[Feature, set[tuple[str, str]]] | None = None
        self._mutex = threading.Lock()

    @classmethod
    def in_home(cls, home: Path | None = None) -> Capabilities:
        """The record of ``home`` (default: ``$PSEUDOCLAUDE_HOME`` as it is now)."""
        return cls(Path(home if home is not None else pseudoclaude_home()) / CAPABILITIES_FILE)

    def refuses(self, feature: Feature, base_url: str, model: str) -> bool:
        with self._mutex:
            if self._refused is None:
                record = self._read()
                self._refused = {f: {(e.base_url, e.model) for e in record.refused(f)} for f in Feature}
            return (endpoint_url(base_url), model) in self._refused[feature]

    def remember(self, feature: Feature, base_url: str, model: str) -> None:
        """Record that ``model`` at ``base_url`` refused ``feature`` (never raises: losing the
        record only costs one more refused request)."""
        key = (endpoint_url(base_url), model)
        with self._mutex:
            if self._refused is None:
                self._refused = {f: set() for f in Feature}
            self._refused[feature].add(key)
        try:
            locks = self.path.parent / "locks"
            self.fs.makedirs(locks, mode=0o700)
            with file_lock(locks / "capabilities.lock", timeout=_LOCK_TIMEOUT):
                record = self._read()
                entries = record.refused(feature)
                if any((e.base_url, e.model) == key for e in entries):
                    return
                since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                entries.append(RefusedEndpoint(base_url=key[0], model=key[1], since=since))
                data = json.dumps(record.model_dump(), indent=2, ensure_ascii=True) + "\n"
                self.fs.atomic_write(self.path, data.encode("ascii"), mode=0o600)
        except Exception as e:
            what = feature.value.removeprefix("refused_").replace("_", " ")
            log.warning("could not record in %s that %s refused %s: %s", self.path, key[0], what, e)

    # The memory model's structured output, by the names its callers and tests know.
    def refuses_structured(self, base_url: str, model: str) -> bool:
        return self.refuses(Feature.STRUCTURED_OUTPUT, base_url, model)

    def remember_refusal(self, base_url: str, model: str) -> None:
        self.remember(Feature.STRUCTURED_OUTPUT, base_url, model)

    def _read(self) -> CapabilitiesRecord:
        try:
            raw = self.fs.read_bytes(self.path, max_bytes=_CAPABILITIES_MAX_BYTES)
        except FileNotFoundError:
            return CapabilitiesRecord()
        except OSError as e:  # a symlink, a folder, unreadable: nothing is known
            log.info("ignoring %s: %s", self.path, e)
            return CapabilitiesRecord()
        try:
            if len(raw) > _CAPABILITIES_MAX_BYTES:
                raise ValueError("too large")
            return CapabilitiesRecord.model_validate_json(raw)
        except (ValueError, ValidationError) as e:
            # Damaged (a torn write by another tool, an edit): known nothing; the next refusal
            # writes the file anew.
            log.info("ignoring damaged %s: %s", self.path, " ".join(str(e).split())[:200])
            return CapabilitiesRecord()
