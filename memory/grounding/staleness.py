"""Citations checked against the workspace: which project cards went stale, and why.

``Grounding`` is one workspace's checker. At write time it turns the citations an op gave into
recorded ``Cite``s (path, range, content id), dropping each one it cannot keep with a reason; at
read time it says, per card, whether each cited file is unchanged, changed, renamed (git's
rename detection, or the same content at another path) or deleted since the card was written
or last confirmed. Checking is a ``stat`` per cited file while nothing changed (ids are cached
by stat key), and asks git only when a cited file is missing.

Everything here is synchronous and thread-safe; callers on an event loop use a thread.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from memory.constants import Level
from memory.grounding.confine import (
    MAX_CITED_BYTES,
    MAX_SPEC_CHARS,
    CiteRefused,
    confine_cite,
    encodable,
    inside,
    parse_spec,
)
from memory.grounding.hashing import FileIds, GitProbe, id_kind
from memory.model import Cite, DroppedCite, NoteMeta
from memory.text.names import quote, sanitize_line

__all__ = ["MAX_CITES", "CardCheck", "CiteState", "Grounding", "shared_ids"]

MAX_CITES = 20
# Renames are looked up again at most this often while git's index and HEAD stay put (an
# unstaged ``mv`` changes neither).
_RENAME_TTL_S = 5.0
# Untracked files hashed when looking for a moved file's content, at most.
_MAX_CANDIDATES = 2000
_MAX_CANDIDATE_BYTES = 8 * 1024 * 1024

State = Literal["fresh", "changed", "renamed", "deleted", "unreadable"]
# What looking at a cited path found: (real path, stat, stat key), or why it cannot be checked.
_Probe = tuple[str, os.stat_result, tuple[int, int, int, int]] | str
_MISSING = "missing"

_SHARED_IDS = FileIds()


def shared_ids() -> FileIds:
    """The process's content-id cache (every checker of the process shares it)."""
    return _SHARED_IDS


class CiteState(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    lines: str | None = None
    state: State
    renamed_to: str | None = None
    reason: str = ""  # one line; "" when fresh

    @property
    def spec(self) -> str:
        return f"{self.path}:{self.lines}" if self.lines else self.path


class CardCheck(BaseModel):
    """One card's citations as they stand in the workspace now."""

    model_config = ConfigDict(frozen=True)

    level: Level
    filename: str
    cites: tuple[CiteState, ...] = ()

    @property
    def stale(self) -> bool:
        return any(c.state != "fresh" for c in self.cites)

    @property
    def reason(self) -> str:
        """One line: the first stale citation's reason, and how many more there are."""
        bad = [c.reason for c in self.cites if c.state != "fresh"]
        if not bad:
            return ""
        more = len(bad) - 1
        return bad[0] + (f"; and {more} more citation{'s' if more > 1 else ''}" if more else "")


def _shown(path: str) -> str:
    """A path as a reason shows it: one line, bounded (a hand-edited card is untrusted)."""
    return sanitize_line(path, 160) or quote(path)


class Grounding:
    """The citation checker of one workspace (a real path)."""

    def __init__(
        self,
        workspace: Path | str,
        protected: Sequence[Path | str] = (),
        *,
        ids: FileIds | None = None,
        git: GitProbe | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.workspace = os.path.realpath(workspace)
        self.protected = tuple(os.path.realpath(p) for p in protected)
        self.ids = ids if ids is not None else _SHARED_IDS
        self.git = git if git is not None else GitProbe(self.workspace)
        self._clock = clock
        self._lock = threading.Lock()
        # parent folder -> (its lstat key, whether its real path is inside the workspace and
        # outside the protected folders): a warm check does not resolve every path again.
        self._dirs: dict[str, tuple[tuple[int, int, int], bool]] = {}
        self._renames: (
            tuple[tuple[object, ...], tuple[float, dict[str, str], dict[str, str], list[str]]] | None
        ) = None
        self._checks: dict[tuple[object, ...], CardCheck] = {}
        # Untracked files by content id, per rename-sources epoch (keyed by when it was taken).
        self._content: dict[tuple[float, str], dict[str, str]] = {}

    # -- at write time -----------------------------------------------------------------------

    def resolve(self, raw: Sequence[Any], index: int = 0) -> tuple[tuple[Cite, ...], list[DroppedCite]]:
        """The citations of an op as the card records them, and each one dropped with why."""
        kept: list[Cite] = []
        dropped: list[DroppedCite] = []
        pending: list[tuple[str, str | None, str]] = []  # (rel, lines, real)
        seen: set[tuple[str, str | None]] = set()
        for item in raw:
            try:
                spec, path, lines = _spec_of(item)
                if len(pending) >= MAX_CITES:
                    raise CiteRefused(f"{quote(spec)}: a card keeps at most {MAX_CITES} citations")
                found = confine_cite(self.workspace, path, self.protected)
            except CiteRefused as e:
                dropped.append(DroppedCite(index=index, cite=_cite_text(item), reason=str(e)))
                continue
            if (found.rel, lines) in seen:
                continue
            seen.add((found.rel, lines))
            pending.append((found.rel, lines, found.real))
        tracked = self.git.tracked(rel for rel, _, _ in pending)
        for rel, lines, real in pending:
            try:
                blob = self.ids.of(real, "git" if rel in tracked else "sha256")
            except OSError as e:
                reason = f"{quote(rel)} cannot be read ({e.strerror or type(e).__name__})"
                dropped.append(DroppedCite(index=index, cite=rel, reason=reason))
                continue
            kept.append(Cite(path=rel, lines=lines, blob=blob))
        return tuple(kept), dropped

    def refresh(self, cites: Sequence[Cite]) -> tuple[tuple[Cite, ...], list[str]]:
        """A confirmation's citations: each one's id taken again, a renamed file followed to its
        new path, a deleted one left out. Returns them and one line per change made."""
        states = self._states(cites, None, since_confirmed=True)
        out: list[Cite] = []
        said: list[str] = []
        tracked = self.git.tracked(
            s.renamed_to or s.path for s in states if s.state in ("fresh", "changed", "renamed")
        )
        for cite, s in zip(cites, states, strict=True):
            if s.state in ("deleted", "unreadable"):
                said.append(f"dropped the citation of {_shown(cite.path)}: {s.reason}")
                continue
            path = s.renamed_to or cite.path
            try:
                found = confine_cite(self.workspace, path, self.protected)
                blob = self.ids.of(found.real, "git" if path in tracked else "sha256")
            except (CiteRefused, OSError) as e:
                said.append(f"dropped the citation of {_shown(cite.path)}: {e}")
                continue
            if s.state == "renamed":
                said.append(f"{_shown(cite.path)} is now cited as {_shown(path)}")
            out.append(Cite(path=path, lines=cite.lines, blob=blob))
        return tuple(out), said

    # -- at read time ------------------------------------------------------------------------

    def check(self, level: Level, filename: str, meta: NoteMeta) -> CardCheck:
        return self._check(level, filename, meta, {})

    def check_many(self, cards: Iterable[tuple[Level, str, NoteMeta]]) -> dict[tuple[Level, str], CardCheck]:
        """Every given card that has citations, checked in one pass (a file cited by several
        cards is looked at once)."""
        memo: dict[str, _Probe] = {}
        return {(lv, name): self._check(lv, name, meta, memo) for lv, name, meta in cards if meta.cites}

    def _check(self, level: Level, filename: str, meta: NoteMeta, memo: dict[str, _Probe]) -> CardCheck:
        # "Confirmed" only when that came after the card's last write (RFC 3339 UTC sorts as text).
        confirmed = bool(meta.confirmed) and meta.confirmed >= meta.updated
        probes = tuple(self._probe(c.path, memo) for c in meta.cites)
        # While no cited file's stat changed, the answer is the last one (no ids, no models). A
        # missing file's answer (deleted, or renamed to where?) also depends on what git and the
        # other files say: it holds while the rename sources it was taken from do.
        epoch = self._rename_sources()[0] if any(isinstance(p, str) for p in probes) else 0.0
        key = (
            level,
            filename,
            meta.cites,
            confirmed,
            epoch,
            tuple(p if isinstance(p, str) else p[2] for p in probes),
        )
        with self._lock:
            hit = self._checks.get(key)
        if hit is not None:
            return hit
        states = self._states(meta.cites, probes, since_confirmed=confirmed, memo=memo)
        check = CardCheck(level=level, filename=filename, cites=tuple(states))
        with self._lock:
            if len(self._checks) > 20_000:
                self._checks.clear()
            self._checks[key] = check
        return check

    def _states(
        self,
        cites: Sequence[Cite],
        probes: Sequence[_Probe] | None,
        *,
        since_confirmed: bool,
        memo: dict[str, _Probe] | None = None,
    ) -> list[CiteState]:
        memo = {} if memo is None else memo
        if probes is None:
            probes = [self._probe(c.path, memo) for c in cites]
        out: list[CiteState] = []
        missing: list[int] = []
        for i, (cite, probe) in enumerate(zip(cites, probes, strict=True)):
            state = self._state(cite, probe, since_confirmed)
            out.append(state)
            if state.state == "deleted":
                missing.append(i)
        if missing:
            moved = self._moved([cites[i] for i in missing], memo)
            for i in missing:
                new = moved.get(cites[i].path)
                if new is not None:
                    reason = f"{_shown(cites[i].path)} was renamed to {_shown(new)}"
                    out[i] = out[i].model_copy(
                        update={"state": "renamed", "renamed_to": new, "reason": reason}
                    )
        return out

    def _state(self, cite: Cite, probe: _Probe, since_confirmed: bool) -> CiteState:
        def say(state: State, reason: str) -> CiteState:
            return CiteState(path=cite.path, lines=cite.lines, state=state, reason=reason)

        if isinstance(probe, str):
            if probe == _MISSING:
                return say("deleted", f"{_shown(cite.path)} was deleted")
            return say("unreadable", f"{_shown(cite.path)} cannot be checked: {probe}")
        path, st, _ = probe
        try:
            now = self.ids.of(path, id_kind(cite.blob), st)
        except OSError as e:
            return say("unreadable", f"{_shown(cite.path)} cannot be read ({e.strerror or type(e).__name__})")
        if now == cite.blob:
            return say("fresh", "")
        when = "last confirmed" if since_confirmed else "written"
        return say("changed", f"{_shown(cite.path)} changed since this card was {when}")

    def _probe(self, rel: str, memo: dict[str, _Probe]) -> _Probe:
        hit = memo.get(rel)
        if hit is None:
            hit = memo[rel] = self._citable(rel)
        return hit

    def _citable(self, rel: str) -> _Probe:
        """The real path, stat and stat key of a recorded citation, or why it cannot be checked
        (``_MISSING`` when it does not exist). The common case (a regular file in a folder already
        seen) is two ``lstat``s."""
        parts = rel.split("/")
        if (
            not rel
            or "\x00" in rel
            or os.path.isabs(rel)
            or ".." in parts
            or ".git" in parts
            or not encodable(rel)
        ):
            return f"{quote(rel)} is not a workspace-relative path"
        joined = os.path.join(self.workspace, rel)
        try:
            st = os.lstat(joined)
        except FileNotFoundError:
            return _MISSING
        except OSError as e:
            return f"{quote(rel)} cannot be read ({e.strerror or type(e).__name__})"
        if st.st_size > MAX_CITED_BYTES:
            return f"{quote(rel)} is larger than {MAX_CITED_BYTES // (1024 * 1024)} MiB"
        if not (stat.S_ISREG(st.st_mode) and self._dir_ok(os.path.dirname(joined))):
            try:
                found = confine_cite(self.workspace, rel, self.protected)
                joined, st = found.real, os.stat(found.real)
            except CiteRefused as e:
                return _MISSING if "does not exist" in str(e) else str(e)
            except OSError as e:
                return f"{quote(rel)} cannot be read ({e.strerror or type(e).__name__})"
        return joined, st, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def _dir_ok(self, folder: str) -> bool:
        try:
            st = os.lstat(folder)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            return False
        key = (st.st_dev, st.st_ino, st.st_mode)
        with self._lock:
            hit = self._dirs.get(folder)
        if hit is not None and hit[0] == key:
            return hit[1]
        real = os.path.realpath(folder)
        ok = inside(real, self.workspace) and not any(inside(real, p) for p in self.protected)
        with self._lock:
            if len(self._dirs) > 10_000:
                self._dirs.clear()
            self._dirs[folder] = (key, ok)
        return ok

    # -- renames -----------------------------------------------------------------------------

    def _moved(self, cites: Sequence[Cite], memo: dict[str, _Probe]) -> dict[str, str]:
        """old path -> new path for the missing cited files git or their content places elsewhere."""
        when, renames, blobs, others = self._rename_sources()
        out: dict[str, str] = {}
        for cite in cites:
            new = _follow(renames, cite.path)
            if new is None or isinstance(self._probe(new, memo), str):
                new = blobs.get(cite.blob)
            # An unstaged ``mv`` of a tracked file: git's index still names the old path.
            if new is None or new == cite.path or isinstance(self._probe(new, memo), str):
                new = self._by_content(id_kind(cite.blob), others, when).get(cite.blob)
            if new is not None and new != cite.path and not isinstance(self._probe(new, memo), str):
                out[cite.path] = new
        return out

    def _rename_sources(self) -> tuple[float, dict[str, str], dict[str, str], list[str]]:
        """(when taken, git's renames, the index's blob ids, the untracked files), taken again
        when git's index or HEAD moved or after a few seconds (an unstaged ``mv`` moves neither)."""
        token = self.git.state_token()
        now = self._clock()
        with self._lock:
            hit = self._renames
        if hit is not None and hit[0] == token and now - hit[1][0] < _RENAME_TTL_S:
            return hit[1]
        others = self.git.others()
        sources = (
            now,
            self.git.renames(None),
            self.git.index_blobs(),
            self._walk() if others is None else others,
        )
        with self._lock:
            self._renames = (token, sources)
        return sources

    def _by_content(self, kind: str, others: Sequence[str], when: float) -> dict[str, str]:
        """content id -> path of the untracked files (the first, in listing order): hashed once
        per rename-sources epoch, so a store of many cards citing moved files costs one pass."""
        with self._lock:
            hit = self._content.get((when, kind))
        if hit is not None:
            return hit
        found: dict[str, str] = {}
        for rel in others[:_MAX_CANDIDATES]:
            real = os.path.join(self.workspace, rel)
            if any(inside(real, p) for p in self.protected):
                continue  # the stores' own files are never a cited file's new place
            try:
                st = os.lstat(real)
                if stat.S_ISREG(st.st_mode) and st.st_size <= _MAX_CANDIDATE_BYTES:
                    found.setdefault(self.ids.of(real, kind, st), rel)
            except OSError:
                continue
        with self._lock:
            if len(self._content) > 8:
                self._content.clear()
            self._content[(when, kind)] = found
        return found

    def _walk(self) -> list[str]:
        """The workspace's files when git cannot list the untracked ones (no repository, or no
        git): symlinks not followed, ``.git`` and the protected folders left out, bounded."""
        out: list[str] = []
        for top, dirs, files in os.walk(self.workspace):
            dirs[:] = sorted(
                d
                for d in dirs
                if d.casefold() != ".git" and not any(inside(os.path.join(top, d), p) for p in self.protected)
            )
            for name in sorted(files):
                out.append(os.path.relpath(os.path.join(top, name), self.workspace).replace(os.sep, "/"))
                if len(out) >= _MAX_CANDIDATES:
                    return out
        return out


def _follow(renames: dict[str, str], path: str) -> str | None:
    seen = {path}
    new = renames.get(path)
    while new is not None and new in renames and renames[new] not in seen:
        seen.add(new)
        new = renames[new]
    return new


def _cite_text(item: object) -> str:
    if isinstance(item, str):
        return sanitize_line(item, 200)
    if isinstance(item, dict) and isinstance(item.get("path"), str):
        return sanitize_line(str(item["path"]), 200)
    return sanitize_line(repr(item), 80)


def _spec_of(item: object) -> tuple[str, str, str | None]:
    """(spec as given, path, lines) of one op citation: ``"path"``, ``"path:10-40"`` or
    ``{"path": ..., "lines": "10-40"}`` (any ``blob`` the model gave is ignored)."""
    if isinstance(item, dict):
        path, lines = item.get("path"), item.get("lines")
        if not isinstance(path, str):
            raise CiteRefused("a citation object needs a string path")
        if lines is not None and not isinstance(lines, str | int):
            raise CiteRefused(f"{quote(path)}: lines must be like 10-40")
        spec = f"{path}:{lines}" if lines is not None else path
    elif isinstance(item, str):
        spec = item
    else:
        kinds = {bool: "a boolean", int: "a number", float: "a number", list: "an array", type(None): "null"}
        raise CiteRefused(f"a citation must be a path string, got {kinds.get(type(item), 'something else')}")
    if len(spec) > MAX_SPEC_CHARS:
        raise CiteRefused(f"{quote(spec)} is longer than {MAX_SPEC_CHARS} characters")
    path, lines = parse_spec(spec)
    if isinstance(item, dict) and item.get("lines") is not None and lines is None:
        raise CiteRefused(f"{quote(path)}: lines must be like 10-40")
    return spec, path, lines
