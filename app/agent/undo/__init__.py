"""Checkpoints of the agent's file edits and rewinding to before a turn."""
