"""What a person or a project adds: hooks, custom commands, MCP servers, and the bundle of them."""
