"""The conversation and its storage: messages, the session file and its log, compaction, attachments."""
