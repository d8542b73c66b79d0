"""The `pseudoclaude memory ...` commands, one module per command family."""
