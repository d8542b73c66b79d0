"""The integration tests use the fake Messages API and the git workspace from tests/conftest.py."""
