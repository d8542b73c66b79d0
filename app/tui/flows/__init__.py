"""Flows the App starts (quit, rewind, sharing, trust, scale, extension commands)."""
