"""Errors a user can fix: printed as one line, never as a traceback; and the one rule for text from the input.

Text from the input (names, event texts, file names, messages quoting them) is shown, never interpreted:

* on a terminal or in a plain-text file, :func:`printable` (control characters shown as escapes);
* in a CSV cell, :func:`neutralise` (no formula, no control character);
* in a matplotlib label, :func:`plot_text` (no mathtext);
* on the dashboard (Textual, rich), as a ``rich.text.Text`` made by :func:`zfsmon.views.top.fmt.inert` and a
  notification with ``markup=False``: never a markup string.
"""

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


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(text: str) -> str:
    """A CSV cell: one that would start a formula in Excel/LibreOffice gets a leading apostrophe; control
    characters are shown as escapes (:func:`printable`)."""
    return ("'" if text.startswith(_FORMULA_START) else "") + printable(text)


def plot_text(text: object) -> str:
    """``text`` for a matplotlib title, label, legend or annotation: :func:`printable`, and every ``$`` escaped, so
    that matplotlib never reads it as mathtext (``$\\foo$`` in a name would raise ValueError). Escaped this way
    rather than with ``text.parse_math`` off: the log axes' tick labels are mathtext of matplotlib's own."""
    return printable(text).replace("$", "\\$")


class UserError(Exception):
    """A wrong argument, a missing tool, a file that is not a recording: say so in one line.

    The message is made :func:`printable`, since it often quotes the input."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(printable(message))
        self.exit_code = exit_code
