"""The chat: the main screen, the prompt's send queue, the turn's view, completion and history."""
