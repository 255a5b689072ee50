"""Modal screens of the spectui app: help, preset picker, preset save form."""
