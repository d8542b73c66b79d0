"""Command line entry point (DESIGN.md §8)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import memory_cli

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(EXIT_USAGE, f"{self.prog}: {message}\n")


def _common(p: argparse.ArgumentParser, *, suppress: bool) -> None:
    # Under `memory` the defaults are suppressed so `-C` given before `memory` is not reset.
    d = argparse.SUPPRESS if suppress else None
    p.add_argument("-C", "--workspace", metavar="DIR", default=d if suppress else ".",
                   help="workspace folder (default: the current directory)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pseudoclaude", description="A terminal coding assistant with long-term memory.")
    _common(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    mem = sub.add_parser("memory", help="inspect and edit long-term memory")
    _common(mem, suppress=True)
    memory_cli.add_commands(mem, lambda p: _common(p, suppress=True))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "memory":
        return memory_cli.run(args)
    parser.print_help(sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
