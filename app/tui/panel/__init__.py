"""The memory side: what fills the side panel (its host, state, feed and snapshot), the grounding
watch, and what follows memory's news (memory_side.MemorySide)."""
