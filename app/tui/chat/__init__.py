"""The chat: one screen (chat_screen.ChatScreen) that owns the chat pane, the prompt, the send
queue, the turn and its view, a resumed session's history, completion and the slash commands."""
