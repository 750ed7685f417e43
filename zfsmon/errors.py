"""Errors a user can fix: printed as one line, never as a traceback."""


class UserError(Exception):
    """A wrong argument, a missing tool, a file that is not a recording: say so in one line."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
