"""The MCP client: servers from the user's config and a trusted project's ``.mcp.json``, their
tools offered to the model as ``mcp__SERVER__TOOL``, their prompts as commands.

Importing this package does not import the ``mcp`` SDK: :class:`McpManager` loads it only when
there is a server to start.
"""

from app.agent.extensions.mcp.config import (
    HttpServer,
    ServerConfig,
    StdioServer,
    UnsetVariableError,
    expand,
    parse_servers,
)
from app.agent.extensions.mcp.manager import DEFAULT_CALL_TIMEOUT, DEFAULT_START_TIMEOUT, McpManager
from app.agent.extensions.mcp.model import McpError, McpPrompt, McpTool, PromptArgument, ServerStatus, State
from app.agent.extensions.mcp.names import PREFIX, api_name
from app.agent.extensions.mcp.project_servers import (
    LoadedServers,
    ProjectServers,
    load_servers,
    project_servers,
    trust_project_servers,
)
from app.agent.extensions.mcp.results import McpResult

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "PREFIX",
    "HttpServer",
    "LoadedServers",
    "McpError",
    "McpManager",
    "McpPrompt",
    "McpResult",
    "McpTool",
    "ProjectServers",
    "PromptArgument",
    "ServerConfig",
    "ServerStatus",
    "State",
    "StdioServer",
    "UnsetVariableError",
    "api_name",
    "expand",
    "load_servers",
    "parse_servers",
    "project_servers",
    "trust_project_servers",
]
