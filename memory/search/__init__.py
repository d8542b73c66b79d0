"""Search over the cards: a derived SQLite FTS5 cache per store folder, recall of
cards beyond the prompt's index, ``search_memory`` and the browser's filter."""
