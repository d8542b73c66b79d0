"""The memory side panel's state, feed and snapshot."""
