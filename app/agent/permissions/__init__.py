"""Permission rules: parsing, matching (with the shell splitter), edits and suggestions."""
