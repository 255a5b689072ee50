"""Acceptance models: how many drafted tokens a cycle accepts."""
