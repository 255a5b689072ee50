"""Shapes of what a cycle drafts: token trees."""
