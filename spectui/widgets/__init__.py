"""Widgets of the spectui app, one per file."""
