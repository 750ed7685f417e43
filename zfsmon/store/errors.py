"""Why a recording cannot be read or written, in words a user can act on."""

from __future__ import annotations

from zfsmon.errors import UserError


class RecordingError(UserError):
    """Not a recording, a damaged one, or one written by a newer zfsmon."""


class RecordingFull(RecordingError):
    """The filesystem filled up: the recorder stopped, everything before is kept."""
