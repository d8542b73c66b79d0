"""The conversation and its storage: typed content blocks, the rules that keep a conversation valid,
the session file (its records, the log read back, the session being written, the store of
sessions), compaction's pure parts, attachments."""
