"""One turn's loop: the Runner, its events, tool calls and the system prompt it is given."""
