"""Errors the command line reports as one line with exit status 2."""


class UsageError(Exception):
    """A user mistake (bad flag combination, missing optional package, ...)."""
