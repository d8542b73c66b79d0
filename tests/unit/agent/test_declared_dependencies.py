"""pyproject.toml declares every package the product imports, and pins those the snapshots draw through."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = ("app", "memory", "widgets")
# The frames the snapshot tests compare are drawn by these: a new release may change a byte.
DRAWN_THROUGH = {"textual", "rich", "markdown-it-py", "pygments"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> dict[str, str]:
    """Each declared distribution's normalised name -> its requirement as written."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {_norm(re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0]): d for d in deps}


def _imported_top_levels() -> dict[str, str]:
    """Each third-party top-level module the product imports (at any depth, in any function) ->
    one file that imports it."""
    out: dict[str, str] = {}
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in PRODUCT and top != "__future__":
                        out.setdefault(top, str(path.relative_to(ROOT)))
    return out


def test_every_package_the_product_imports_is_declared() -> None:
    declared = _declared()
    providers = importlib.metadata.packages_distributions()
    imported = _imported_top_levels()
    assert {"textual", "anthropic", "httpx2", "pydantic", "pathspec"} <= set(
        imported
    )  # the scan sees imports
    missing = {
        top: where
        for top, where in imported.items()
        if not any(_norm(dist) in declared for dist in providers.get(top, [top]))
    }
    assert missing == {}, f"imported but not in [project] dependencies: {missing}"


def test_the_packages_the_snapshots_draw_through_are_pinned_exactly() -> None:
    declared = _declared()
    for dist in DRAWN_THROUGH:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", declared[dist]), declared[dist]
        # The pin is what the tests run with (a stale pin would let the snapshots drift unseen).
        assert declared[dist].split("==")[1] == importlib.metadata.version(dist)
