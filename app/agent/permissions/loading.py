"""Reading the permission rules and the permission mode of the three settings files (see
``app.agent.config.layers``): the user's ``config.toml``, the project's shared
``.PseudoClaude/settings.toml`` and the personal ``.PseudoClaude/settings.local.toml``.

What came with the clone waits for the person's trust before it loosens anything: the shared
file's ``allow`` rules, and its ``permission_mode = "accept-edits"`` (edits would run without
asking). Both are one thing to trust (kind ``permissions``): the person is shown each allow rule
and the mode line, and a yes covers exactly that text. Its ``deny`` and ``ask`` rules and a
``permission_mode`` of ``plan`` or ``default`` only tighten: they apply at once.

``permission_mode`` is read here from the project's two files only (the personal one beats the
shared one); the user's ``config.toml`` key is a setting (``Settings.permission_mode``), read and
checked with the other settings. Which of them starts a run is the runtime's to say.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from app.agent.config.layers import ConfigLayer, PendingTrust, is_trusted, read_layers
from app.agent.config.project_trust import ProjectTrust
from app.agent.permissions.modes import PermissionMode
from app.agent.permissions.rules import LISTS, PermissionRules, RuleError, SourcedRule, parse_rule
from app.agent.tools.registry import BUILTIN_TOOLS, ToolRegistry
from memory.text.names import quote

__all__ = ["load_permission_rules", "shared_allow_text"]

_NAMES = frozenset(m.value for m in PermissionMode)
_MODES = ", ".join(m.value for m in PermissionMode)


def _rules_of(layer: ConfigLayer, problems: list[str], tools: ToolRegistry) -> list[SourcedRule]:
    if layer.error:
        problems.append(layer.error)
    table = layer.data.get("permissions")
    if table is None:
        return []
    if not isinstance(table, dict):
        problems.append(f"{layer.label}: [permissions] must be a table; ignored")
        return []
    out: list[SourcedRule] = []
    for key, value in table.items():
        if key not in LISTS:
            problems.append(
                f"{layer.label}: unknown key permissions.{key} ignored (allow, ask and deny are known)"
            )
            continue
        if not isinstance(value, list):
            problems.append(f"{layer.label}: permissions.{key} must be a list of rules; ignored")
            continue
        for item in value:
            try:
                rule = parse_rule(item, tools)
            except RuleError as e:
                problems.append(f"{layer.label}: rule {item!r} in permissions.{key} refused: {e}")
                continue
            out.append(SourcedRule(rule=rule, list=key, scope=layer.scope, source=layer.label))
    return out


def _mode_of(layer: ConfigLayer, problems: list[str]) -> PermissionMode | None:
    """The project file's ``permission_mode``; a bad value is one line and counts as none."""
    if layer.scope == "user" or "permission_mode" not in layer.data:
        return None
    raw = layer.data["permission_mode"]
    if isinstance(raw, str) and raw in _NAMES:
        return PermissionMode(raw)
    problems.append(f"{layer.label}: permission_mode must be one of {_MODES}, not {quote(raw, 60)}; ignored")
    return None


def _mode_text(layer: ConfigLayer, mode: PermissionMode) -> str:
    """What the person is shown (and trusts) of a shared file's mode."""
    return f'{layer.label}: permission_mode = "{mode.value}"\n'


def shared_allow_text(rules: Iterable[SourcedRule]) -> str:
    """What the person is shown (and trusts) for the project's allow rules: one per line."""
    return "".join(f"{r.source}: allow {r.rule.text}\n" for r in rules)


def load_permission_rules(
    workspace: Path,
    home: Path | None = None,
    *,
    trust: ProjectTrust | None = None,
    layers: tuple[ConfigLayer, ...] | None = None,
    tools: ToolRegistry = BUILTIN_TOOLS,
) -> PermissionRules:
    """The rules of the three files, naming tools of ``tools``, and the project's permission mode
    in force. Blocking (small files): call it off an event loop."""
    workspace = Path(workspace)
    layers = layers if layers is not None else read_layers(workspace, home)
    problems: list[str] = []
    active: list[SourcedRule] = []
    shared_allow: list[SourcedRule] = []
    modes: list[tuple[ConfigLayer, PermissionMode]] = []
    for layer in layers:
        for r in _rules_of(layer, problems, tools):
            (shared_allow if layer.shared and r.list == "allow" else active).append(r)
        mode = _mode_of(layer, problems)
        if mode is not None:
            modes.append((layer, mode))
    # A shared file's accept-edits loosens (edits would run without asking): it waits with the allow rules.
    loosening: list[tuple[ConfigLayer, PermissionMode]] = [
        (la, m) for la, m in modes if la.shared and m == PermissionMode.ACCEPT_EDITS
    ]
    shown = shared_allow_text(shared_allow) + "".join(_mode_text(la, m) for la, m in loosening)
    pending: PendingTrust | None = None
    waiting: tuple[SourcedRule, ...] = ()
    if shown:
        wanted = PendingTrust.of("permissions", shown)
        if is_trusted(workspace, home, wanted, trust):
            active.extend(shared_allow)
        else:
            pending, waiting = wanted, tuple(shared_allow)
            modes = [(la, m) for la, m in modes if (la, m) not in loosening]
            problems += _waiting_lines(shared_allow, loosening)
    in_force = modes[-1] if modes else None  # the personal file's beats the shared one's
    return PermissionRules(
        workspace=workspace,
        rules=tuple(active),
        waiting=waiting,
        problems=tuple(problems),
        pending_trust=pending,
        mode=in_force[1] if in_force else None,
        mode_source=in_force[0].label if in_force else "",
    )


def _waiting_lines(
    shared_allow: list[SourcedRule], loosening: list[tuple[ConfigLayer, PermissionMode]]
) -> list[str]:
    """One line for the allow rules and one for the mode that wait for trust."""
    lines: list[str] = []
    if shared_allow:
        lines.append(
            f"{len(shared_allow)} allow rule(s) of the project wait for your trust: "
            + ", ".join(r.rule.text for r in shared_allow)
        )
    for layer, mode in loosening:
        lines.append(
            f"{layer.label}: permission_mode {mode.value} came with the repository and waits for your "
            "trust; not in force until then"
        )
    return lines
