"""Errors a user can fix: printed as one line, never as a traceback; and text from input made safe to print."""

from __future__ import annotations

import re

# C0 and C1 control characters (ESC starts terminal escape sequences), DEL, and the Unicode line/paragraph
# separators and bidirectional overrides that rearrange or split what a terminal shows
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def printable(text: object) -> str:
    """``text`` (often derived from input: a file's line, a metric or entity name) with every control
    character shown as an escape (``\\x1b``, ``\\n``), so it prints on one line and cannot drive the terminal.
    The one rendering of input-derived text for messages and names."""
    s = str(text)
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), s)


class UserError(Exception):
    """A wrong argument, a missing tool, a file that is not a recording: say so in one line.

    The message is made :func:`printable`, since it often quotes the input."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(printable(message))
        self.exit_code = exit_code
