"""The one exception type that reaches the user as a single line (no traceback)."""


class UserError(Exception):
    """Bad input or a bad request: the message names the file and the fix."""
