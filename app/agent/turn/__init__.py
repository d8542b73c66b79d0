"""One turn's loop: the Runner (built from ``RunnerDeps``), its tool round, the compactor that keeps
the conversation inside the window, the turn's log, its events, tool calls and the system prompt."""
