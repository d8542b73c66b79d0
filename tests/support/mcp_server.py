"""A real stdio MCP server (the ``mcp`` SDK's server side) for the MCP client's tests.

Run as ``python -m tests.support.mcp_server [MODE]`` (or by path). Modes:

- ``normal``: speaks the protocol at once.
- ``garbage``: writes a line that is not JSON-RPC to stdout, then speaks the protocol.
- ``hang``: never reads stdin nor answers (hangs at start).
- ``slow``: waits ``MCP_TEST_DELAY`` seconds, then speaks the protocol.
- ``http`` / ``sse``: serves streamable HTTP (``/mcp``) or SSE (``/sse``) on 127.0.0.1, port
  ``MCP_TEST_PORT``, instead of stdio.
- ``child``: starts a grandchild (``sleep``, in the server's process group) first and writes that
  child's PID to the file named by ``MCP_TEST_CHILD_PID``, so a test can see it is gone after
  the client closed the server.
- ``setsid``: the same, but the grandchild leaves the server's process group and session
  (``setsid``), keeping the server's stdout and stderr open, as a careless daemon does.
- ``daemon``: a daemon by double fork (the middle process exits at once, the grandchild in its
  own session with its stdio on /dev/null): an orphan by the time anyone looks, no longer the
  server's descendant. Its PID goes to ``MCP_TEST_CHILD_PID`` too.
- ``leak``: writes ``NAME=value`` to stderr for every variable named in ``MCP_TEST_LEAK``
  (comma-separated), then exits (code 1) before speaking: a server whose last words hold them.

Besides, ``MCP_TEST_PID_FILE`` (when set) receives this process's PID, and ``MCP_TEST_NAME``
prefixes the tool names, so two servers can offer different tools.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import ToolAnnotations

# A 1x1 transparent PNG (a whole one: an image decoder reads it).
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000b4944415478da636000020000050001e9fadcd80000000049454e44ae426082"
)


def build(prefix: str = "") -> MCPServer:
    server = MCPServer("pseudoclaude-test-server")

    @server.tool(name=prefix + "echo", description="Returns its input.")
    def echo(text: str) -> str:
        return text

    @server.tool(name=prefix + "sleep", description="Sleeps for a while, then answers.")
    async def sleep(seconds: float = 3600.0) -> str:
        await anyio.sleep(seconds)
        return "slept"

    @server.tool(name=prefix + "big", description="Returns a large text.")
    def big(megabytes: int = 5) -> str:
        return "x" * (megabytes * 1024 * 1024)

    @server.tool(name=prefix + "crash", description="The server exits in the middle of the call.")
    def crash() -> str:
        sys.stderr.write("about to crash\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool(
        name=prefix + "peek", description="Reads only.", annotations=ToolAnnotations(read_only_hint=True)
    )
    def peek() -> str:
        return "peeked"

    @server.tool(name=prefix + "fail", description="Reports an error (naming a variable: with its value).")
    def fail(variable: str = "") -> str:
        raise ToolError(
            f"the thing failed: {variable}={os.environ.get(variable)}" if variable else "the thing failed"
        )

    @server.tool(name=prefix + "picture", description="Returns a text and an image.", structured_output=False)
    def picture() -> list[object]:
        return ["a picture:", Image(data=PNG, format="png")]

    @server.tool(name=prefix + "env", description="Returns an environment variable of the server.")
    def env(name: str) -> str:
        return os.environ.get(name, "<unset>")

    @server.tool(name=prefix + "header", description="Returns a header of the HTTP request.")
    def header(name: str, ctx: Context) -> str:
        return (ctx.headers or {}).get(name.lower(), "<none>")

    @server.prompt(name=prefix + "greet", description="Greets someone.")
    def greet(name: str) -> str:
        return f"Say hello to {name}."

    return server


def _daemon(pid_file: str) -> None:
    """Fork a grandchild in a session of its own whose parent exits at once; wait until its PID
    is written (the grandchild writes it), so the server speaks only once the daemon runs."""
    middle = os.fork()
    if middle == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            with open(pid_file + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(pid_file + ".tmp", pid_file)
            os.execvp("sleep", ["sleep", "3600"])
        os._exit(0)
    os.waitpid(middle, 0)
    while not os.path.exists(pid_file):
        time.sleep(0.01)


def main(mode: str) -> None:
    if pid_file := os.environ.get("MCP_TEST_PID_FILE"):
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
    if mode == "hang":
        time.sleep(3600)
    if mode == "garbage":
        sys.stdout.write("Starting the server... this is not JSON-RPC\n")
        sys.stdout.flush()
    if mode == "slow":
        time.sleep(float(os.environ.get("MCP_TEST_DELAY", "1")))
    if mode == "child":
        # Stays in this server's process group: closing the server must take it too.
        child = subprocess.Popen(["sleep", "3600"])
        with open(os.environ["MCP_TEST_CHILD_PID"], "w") as f:
            f.write(str(child.pid))
    if mode == "setsid":
        child = subprocess.Popen(["sleep", "3600"], start_new_session=True)
        with open(os.environ["MCP_TEST_CHILD_PID"], "w") as f:
            f.write(str(child.pid))
    if mode == "daemon":
        _daemon(os.environ["MCP_TEST_CHILD_PID"])
    if mode == "leak":
        for name in os.environ.get("MCP_TEST_LEAK", "").split(","):
            sys.stderr.write(f"{name}={os.environ.get(name, '')}\n")
        sys.stderr.flush()
        sys.exit(1)
    server = build(os.environ.get("MCP_TEST_NAME", ""))
    if mode in ("http", "sse"):
        port = int(os.environ["MCP_TEST_PORT"])
        server.run("streamable-http" if mode == "http" else "sse", host="127.0.0.1", port=port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "normal")
