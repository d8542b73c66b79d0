"""``pseudoclaude memory worker`` that SIGKILLs itself mid-apply, once (for the worker-death tests).

    python -m tests.support.worker_driver KILL_AT MARKER -- <memory worker argv after the program>

The ``KILL_AT``-th file change inside a store transaction (``MemoryStores.apply``) kills this
process with SIGKILL, unless ``MARKER`` exists; the marker is made just before, so the child the
app starts next runs the job to its end. Everything else is the real command.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

MUTATING = frozenset({"mkdir", "create", "write", "fsync", "replace", "link", "unlink", "fsync_dir"})


def main(argv: list[str]) -> int:
    kill_at, marker = int(argv[0]), argv[1]
    rest = argv[argv.index("--") + 1:]
    from app.cli.main import main as cli_main
    from memory.store.fs import DEFAULT_FS
    from memory.store.stores import MemoryStores

    state = {"inside": 0, "n": 0}
    apply = MemoryStores.apply

    def counted_apply(self: MemoryStores, *args: Any, **kwargs: Any) -> Any:
        state["inside"] += 1
        try:
            return apply(self, *args, **kwargs)
        finally:
            state["inside"] -= 1

    def hook(op: str, path: str) -> None:
        if state["inside"] and op in MUTATING and not os.path.exists(marker):
            if state["n"] == kill_at:
                with open(marker, "w") as f:
                    f.write(f"{os.getpid()}\n")
                os.kill(os.getpid(), signal.SIGKILL)
            state["n"] += 1

    MemoryStores.apply = counted_apply  # type: ignore[method-assign]
    DEFAULT_FS.hook = hook
    return cli_main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
