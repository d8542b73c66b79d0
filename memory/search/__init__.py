"""Search over the cards (DESIGN §15): a derived SQLite FTS5 cache per store folder, recall of
cards beyond the prompt's index, ``search_memory`` and the browser's filter."""
