"""Headless feature services: what the full-screen app and the command line both do with memory,
sessions and turns, as plain calls that return plain data.

Each service takes the runtime's parts it needs (the stores, the manager, the search, the runner),
does its file work off the event loop, and returns frozen dataclasses or pydantic models; none
imports Textual or the widgets. The app's screens and the ``memory`` commands stand on the same
services, so a feature is written once and a test can drive it without a terminal.

This package imports nothing at import time: the app imports it before its first frame.
"""
