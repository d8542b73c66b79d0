"""The permission window and the gate that asks it."""
