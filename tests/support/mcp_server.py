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

# A 1x1 transparent PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8ffff3f0005fe02fea7d6a6d40000000049454e44ae426082"
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

    @server.tool(name=prefix + "peek", description="Reads only.", annotations=ToolAnnotations(read_only_hint=True))
    def peek() -> str:
        return "peeked"

    @server.tool(name=prefix + "fail", description="Reports an error.")
    def fail() -> str:
        raise ToolError("the thing failed")

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
    server = build(os.environ.get("MCP_TEST_NAME", ""))
    if mode in ("http", "sse"):
        port = int(os.environ["MCP_TEST_PORT"])
        server.run("streamable-http" if mode == "http" else "sse", host="127.0.0.1", port=port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "normal")
