"""Reading a captured text (a file, a FIFO or standard input) the one way every command does: bounded.

A capture is read in chunks, never more than :data:`MAX_LINE` bytes past the last line end, so a file without
line ends (``/dev/zero``, one 200 MB line) is refused after a megabyte instead of filling memory, and the whole
text is at most :data:`MAX_TEXT` bytes. What is refused is one line (a UserError); what is read is decoded the
way people's captures come: UTF-8 with or without a byte-order mark, UTF-16 with one (PowerShell's ``>``),
CRLF line ends. A binary file (NUL bytes where text has none) is refused. The file is only ever read.
"""

from __future__ import annotations

import codecs
import os
import stat
import sys
from typing import BinaryIO, List

from zfsmon.errors import UserError
from zfsmon.outfile import os_message

#: the longest line a capture may have (zpool iostat -vl of a wide pool is a few hundred bytes)
MAX_LINE = 1 << 20
#: the largest capture read (a week of `zpool iostat -v 1` of a big pool is well below)
MAX_TEXT = 1 << 30
_CHUNK = 1 << 16


def read_text(path: str) -> str:
    """The text of ``path`` (``-``: standard input), decoded, with ``\\n`` line ends. Raises UserError."""
    if path == "-":
        return _read(sys.stdin.buffer, "standard input")
    try:
        st = os.stat(path)
    except OSError as exc:
        raise UserError(os_message(path, exc, "cannot read")) from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{path} is a directory: give a captured text file")
    try:
        with open(path, "rb") as fh:
            return _read(fh, path)
    except OSError as exc:
        raise UserError(os_message(path, exc, "cannot read")) from None


def _read(fh: BinaryIO, where: str) -> str:
    chunks: List[bytes] = []
    total = 0
    since_newline = 0
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            break
        if not chunks and b"\x00" in chunk[:4096] and not chunk.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            raise UserError(f"{where}: a binary file, not a captured text")
        nl = chunk.rfind(b"\n")
        since_newline = len(chunk) - nl - 1 if nl >= 0 else since_newline + len(chunk)
        if since_newline > MAX_LINE:
            raise UserError(f"{where}: a line longer than {MAX_LINE >> 20} MiB: not a captured text")
        total += len(chunk)
        if total > MAX_TEXT:
            raise UserError(f"{where}: larger than {MAX_TEXT >> 30} GiB: split the capture")
        chunks.append(chunk)
    return decode(b"".join(chunks), where)


def decode(data: bytes, where: str) -> str:
    """Bytes of a capture -> text with ``\\n`` line ends (byte-order marks honoured and dropped)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            raise UserError(f"{where}: starts like UTF-16 but is not valid UTF-16") from None
    else:
        text = data.decode("utf-8-sig", errors="replace")
    if "\x00" in text:
        raise UserError(f"{where}: a binary file, not a captured text")
    return text.replace("\r\n", "\n")
