"""The permission window and the app's side of the gate that asks it."""
