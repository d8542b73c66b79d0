"""The widget tests that run the whole App get the App tests' ``make_app`` fixture here, as a
fixture of this folder (a test module that imported it would shadow it with its own parameter)."""

from tests.tui.conftest import make_app

__all__ = ["make_app"]
