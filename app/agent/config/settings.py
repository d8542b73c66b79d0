"""Settings: flags > ``PSEUDOCLAUDE_*`` environment > ``$PSEUDOCLAUDE_HOME/config.toml`` > defaults.

Use :func:`load_settings`; it is the one entry point that turns every problem into a one-line
:class:`SettingsError` naming where the bad value came from::

    settings = load_settings({"model": args.model, "memory_mode": args.memory})  # None = not given
    for w in settings.warnings:  # e.g. an unknown key in config.toml
        print(f"pseudoclaude: {w}", file=sys.stderr)

The config file uses the field names as keys (``model = "..."``, ``memory_mode = "review"``);
its path is taken from ``PSEUDOCLAUDE_HOME`` (or the ``home`` argument) each time settings are
loaded, never at import. ``PSEUDOCLAUDE_HOME`` itself is not a setting (see ``memory.store.paths``),
and credentials are never settings: they stay in the SDK's own ``ANTHROPIC_*`` variables.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings import SettingsError as PydanticSettingsError

from app.agent.model.pricing import ModelPrice
from memory.constants import MemoryMode
from memory.store.paths import Paths, pseudoclaude_home
from memory.text.lines import one_line
from memory.text.names import quote

ENV_PREFIX = "PSEUDOCLAUDE_"

ModelName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
# The permission modes' names (``app.agent.permissions.modes.PermissionMode``'s values, kept equal
# by a test: the settings sit below the permissions and cannot import them).
PermissionModeName = Literal["default", "accept-edits", "plan"]

# How each setting is spelled on the command line, for error messages.
FLAG_NAMES: dict[str, str] = {
    "model": "--model",
    "memory_model": "--memory-model",
    "memory_mode": "--memory",
    "max_iterations": "--max-iterations",
    "memory_wait": "--memory-wait",
    "permission_mode": "--permission-mode",
    "thinking": "--thinking",
}


def thinking_problem(budget: int, max_tokens: object) -> str:
    """Why extended thinking cannot run with this budget ("" when it can)."""
    if isinstance(max_tokens, int) and budget >= max_tokens:
        return f"must be below max_tokens ({max_tokens}): lower it or raise max_tokens"
    return ""


class SettingsError(Exception):
    """A configuration problem; ``str(err)`` is one line naming the source and the problem."""


@dataclass
class _LoadContext:
    home: Path | None = None
    warnings: list[str] = field(default_factory=list)
    config_file: Path | None = None


# Carries ``home`` into ``settings_customise_sources`` (a classmethod with a fixed signature)
# and the config file's warnings back out, without any module-level mutable state.
_LOAD: ContextVar[_LoadContext | None] = ContextVar("pseudoclaude_settings_load", default=None)


def config_file_path(home: Path | None = None) -> Path:
    """``$PSEUDOCLAUDE_HOME/config.toml``, computed now (``home`` overrides the environment)."""
    home = Path(home) if home is not None else pseudoclaude_home()
    return Paths(home=home, workspace=home).config_file


class Settings(BaseSettings):
    """The app's settings. ``warnings`` lists non-fatal problems found while loading."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        case_sensitive=False,
        env_ignore_empty=True,  # `PSEUDOCLAUDE_MODEL= pseudoclaude` means "not set"
        extra="ignore",
        validate_default=True,
    )

    model: ModelName = "claude-sonnet-5-5"
    memory_model: ModelName = "claude-haiku-5-5"
    # web_search's side request (the server tool's searches and a short cited answer) runs on
    # this model; unset, on the memory model (``search_model``).
    web_model: ModelName | None = None
    memory_mode: MemoryMode = MemoryMode.AUTO
    max_iterations: int = Field(default=50, ge=1)
    memory_wait: float = Field(default=15.0, ge=0, allow_inf_nan=False)
    max_tokens: int = Field(default=16000, gt=0)  # per main-model response
    # How much runs without asking at start: default, accept-edits or plan. Unset: the project's
    # settings files say, else default (app.agent.permissions.loading; the runtime decides).
    permission_mode: PermissionModeName | None = None
    # Extended thinking of the main model (the app's Tab on an empty prompt turns it on and off):
    # a budget in tokens, counted in max_tokens and below it.
    thinking: bool = False
    thinking_budget: int = Field(default=8000, ge=1024)
    bash_timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False)
    # Long sessions: the main model's window, the fill that starts a compaction,
    # and the size over which a tool result is kept on disk instead of in the conversation.
    context_window: int = Field(default=200_000, ge=2_000)
    compact_at: float = Field(default=0.8, gt=0.1, le=1.0, allow_inf_nan=False)
    offload_bytes: int = Field(default=32 * 1024, ge=1024)
    # A tool call whose input (as JSON) passes this, or half the window, is refused when it
    # arrives: an input cannot be moved to disk like a result, and one that filled the window
    # would leave every later request too large.
    tool_input_max_bytes: int = Field(default=256 * 1024, ge=1024)
    # Consolidation: automatic after this many new cards in a store (0 = never);
    # its operations held for review, also in auto mode, unless consolidate_review is false.
    consolidate_after: int = Field(default=50, ge=0)
    consolidate_review: bool = True
    # A git URL (or a local bare repository) that makes the user store a git
    # repository kept in step by `memory sync`; "" = the user store stays on this machine.
    user_memory_remote: str = ""
    # Where the memory worker runs: "process" = a child process (`pseudoclaude memory
    # worker`) elected by the workspace's worker lock, so an apply never shares the screen's
    # interpreter; "thread" = in this process (print mode's one job, and tests with an in-process
    # memory model).
    memory_worker: Literal["process", "thread"] = "process"
    # A memory-model stream that sends nothing for this many seconds is a failed attempt.
    memory_idle_timeout: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    # Per-model prices (USD per MTok) over app/agent/model/pricing.PRICES: `[prices."model"] input = 3.0 ...`
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    # MCP servers: how long a server may take to start (the app never waits for it; print mode
    # does, up to this), and one tool call.
    mcp_start_timeout: float = Field(default=10.0, gt=0, le=600, allow_inf_nan=False)
    mcp_call_timeout: float = Field(default=120.0, gt=0, le=86400, allow_inf_nan=False)
    # Checkpoints of the agent's file edits (rewind): whole sessions are removed, oldest first,
    # past this many days after their last checkpoint or while all together pass this many MB.
    checkpoint_max_mb: int = Field(default=500, ge=1)
    checkpoint_max_days: float = Field(default=30.0, gt=0, allow_inf_nan=False)

    _warnings: list[str] = PrivateAttr(default_factory=list)
    _for_run: frozenset[str] = PrivateAttr(default=frozenset())

    def __init__(self, **values: Any) -> None:
        ctx = _LOAD.get()
        token = _LOAD.set(_LoadContext()) if ctx is None else None
        try:
            super().__init__(**values)
            self._warnings = list((ctx or _LOAD.get() or _LoadContext()).warnings)
        finally:
            if token is not None:
                _LOAD.reset(token)

    @property
    def search_model(self) -> str:
        """The model ``web_search``'s side request runs on: ``web_model``, else the memory model."""
        return self.web_model or self.memory_model

    def given_for_run(self, name: str) -> bool:
        """Whether setting ``name`` came from a flag or the environment: this run's own choice,
        which beats every settings file (a project's too), not only ``config.toml``."""
        return name in self._for_run

    def turn_thinking(self, on: bool) -> None:
        """Extended thinking on or off from now on (the app's Tab); ValueError (one line) when
        its budget does not fit ``max_tokens``."""
        problem = thinking_problem(self.thinking_budget, self.max_tokens) if on else ""
        if problem:
            raise ValueError(f"thinking stays off: thinking_budget {problem}")
        self.thinking = on

    @property
    def warnings(self) -> list[str]:
        """Non-fatal problems found while loading (one line each), e.g. unknown config keys."""
        return list(self._warnings)

    @field_validator("user_memory_remote", mode="after")
    @classmethod
    def _git_remote(cls, v: str) -> str:
        v = v.strip()
        if not v:
            return ""
        if v.startswith("-"):
            raise ValueError("must be a git URL or a path, not an option")
        if not v.isprintable() or any(c.isspace() for c in v):
            raise ValueError("must be one git URL or path, without spaces or control characters")
        if "::" in v:
            # git's remote helpers (`ext::` runs a command): never from a config value.
            raise ValueError("remote helpers (`transport::address`) are not allowed; use a URL or a path")
        return v

    @field_validator("thinking_budget", mode="after")
    @classmethod
    def _budget_below_max_tokens(cls, v: int, info: ValidationInfo) -> int:
        # With thinking on, the API refuses a budget at or over the response's bound: said here,
        # once, not per request (the app's toggle checks it again: thinking_problem).
        if info.data.get("thinking"):
            problem = thinking_problem(v, info.data.get("max_tokens"))
            if problem:
                raise ValueError(problem)
        return v

    @field_validator(
        "max_iterations",
        "memory_wait",
        "max_tokens",
        "thinking_budget",
        "bash_timeout",
        "context_window",
        "compact_at",
        "offload_bytes",
        "tool_input_max_bytes",
        "consolidate_after",
        "memory_idle_timeout",
        "mcp_start_timeout",
        "mcp_call_timeout",
        "checkpoint_max_mb",
        "checkpoint_max_days",
        mode="before",
    )
    @classmethod
    def _no_booleans(cls, v: Any) -> Any:
        # TOML `max_iterations = true` would otherwise quietly become 1.
        if isinstance(v, bool):
            raise ValueError("expected a number, not a boolean")
        return v

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # No dotenv and no secrets dir: a stray `.env` in a project must not configure the app.
        ctx = _LOAD.get() or _LoadContext()
        path = config_file_path(ctx.home)
        ctx.config_file = path
        config = ConfigFileSource(settings_cls, path)
        ctx.warnings.extend(config.warnings)
        return (init_settings, env_settings, config)


class ConfigFileSource(TomlConfigSettingsSource):
    """``config.toml`` with one-line errors naming the file, and unknown keys reported, not fatal."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path) -> None:
        self.path = Path(path)
        if os.path.lexists(self.path) and not self.path.is_file():
            raise SettingsError(f"{self.path}: not a regular file")
        super().__init__(settings_cls, toml_file=self.path)
        # Tables read by their own loaders (app/agent/extensions/extensions.py), not settings.
        known = {name.lower() for name in settings_cls.model_fields} | {"mcp_servers", "permissions", "hooks"}
        self.unknown_keys = [k for k in self.toml_data if k.lower() not in known]
        self.warnings = [f"{self.path}: unknown key {k!r} ignored" for k in self.unknown_keys]

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        try:
            with open(file_path, "rb") as f:
                return tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise SettingsError(f"{self.path}: invalid TOML: {one_line(e)}") from None
        except UnicodeDecodeError:
            raise SettingsError(f"{self.path}: invalid TOML: not UTF-8 text") from None
        except OSError as e:
            raise SettingsError(f"{self.path}: cannot read: {e.strerror or e}") from None


def load_settings(flags: Mapping[str, object] | None = None, *, home: Path | None = None) -> Settings:
    """Load settings: ``flags`` (keys = field names; ``None`` values = not given) beat the
    ``PSEUDOCLAUDE_*`` environment, which beats ``config.toml`` under ``home`` (default:
    ``$PSEUDOCLAUDE_HOME`` read now), which beats the defaults.

    Raises :class:`SettingsError` (one line, naming the flag, environment variable or config
    file and key) for invalid TOML or values. Unknown config keys are not errors: they are in
    the result's ``warnings``. A flag key that is not a setting is a programming error
    (``TypeError``).
    """
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    unknown = sorted(k for k in given if k not in Settings.model_fields)
    if unknown:
        raise TypeError(f"load_settings: not a setting: {', '.join(unknown)}")
    ctx = _LoadContext(home=Path(home) if home is not None else None)
    token = _LOAD.set(ctx)
    try:
        settings = Settings(**given)
        settings._for_run = frozenset(n for n in Settings.model_fields if n in given or _env_names(n))
        return settings
    except ValidationError as e:
        raise SettingsError(_describe(e, given, ctx.config_file)) from None
    except PydanticSettingsError as e:
        # A table setting (prices) in the environment must be JSON; say which one, in one line.
        name = m.group(1) if (m := re.search(r'field "(\w+)"', str(e))) else "?"
        raise SettingsError(f"invalid {_source_of(name, given, ctx.config_file)}: expected JSON") from None
    finally:
        _LOAD.reset(token)


# -- error messages ------------------------------------------------------------------------


def _short(value: object, limit: int = 60) -> str:
    # A bad value may hold a secret (a key pasted into the wrong setting): redacted, shortened.
    return quote(value, limit)


def _env_names(name: str) -> list[str]:
    """The environment variables that set ``name`` (read case-insensitively, empty ones unset)."""
    wanted = (ENV_PREFIX + name).lower()
    return [k for k, v in os.environ.items() if k.lower() == wanted and v != ""]


def _source_of(name: str, given: Mapping[str, object], config_file: Path | None) -> str:
    """Where the effective value of ``name`` came from, by the same precedence the sources use."""
    if name in given:
        return f"flag {FLAG_NAMES.get(name, '--' + name.replace('_', '-'))}"
    env_names = _env_names(name)
    if env_names:
        return f"environment variable {env_names[-1]}"
    if config_file is not None:
        try:
            with open(config_file, "rb") as f:
                keys = [k for k in tomllib.load(f) if k.lower() == name]
        except (OSError, ValueError):
            keys = []
        if keys:
            return f"key {keys[-1]!r} in {config_file}"
    return f"setting {name}"


def _describe(err: ValidationError, given: Mapping[str, object], config_file: Path | None) -> str:
    parts: list[str] = []
    for e in err.errors(include_url=False):
        name = str(e["loc"][0]) if e.get("loc") else "?"
        msg = str(e.get("msg", "invalid value")).removeprefix("Value error, ")
        msg = msg[:1].lower() + msg[1:]
        parts.append(f"invalid {_source_of(name, given, config_file)}: {msg} (got {_short(e.get('input'))})")
    return one_line("; ".join(parts)) or "invalid settings"
