"""The one way zfsmon writes an output file (exports, reports, imported recordings' checks): safely.

- :func:`check_target` before anything starts: the directory exists, the name is not a directory.
- :func:`atomic` writes into a temporary file in the target's own directory and renames it over the target
  only once everything is written and flushed to disk, so a reader never sees a half-written file and a
  failure (disk full, read-only file system, no permission, an error while producing the content) leaves
  neither a partial nor a 0-byte file behind: the earlier file, if any, is untouched.
- :func:`os_message` says what an ``OSError`` means for the file, in one line.

Every failure is a :class:`~zfsmon.errors.UserError` (one line, exit 1 for write failures).
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from typing import IO, Iterator

from zfsmon.errors import UserError

_WHY = {
    errno.ENOSPC: "the file system is full",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EISDIR: "it is a directory",
    errno.ENOENT: "no such file or directory",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.EFBIG: "the file is too large for the file system",
    errno.EIO: "input/output error",
}


def os_message(path: str, exc: OSError, doing: str = "cannot write") -> str:
    """``PATH: cannot write: the file system is full`` (one line, whatever the error)."""
    why = _WHY.get(exc.errno or 0) or exc.strerror or str(exc)
    return f"{path}: {doing}: {why}"


def check_target(path: str) -> None:
    """A file about to be written: its directory must exist and the name must not be a directory. Raises
    UserError (before anything has been started)."""
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UserError(f"{path} is a directory: give a file name")
    if not os.path.isdir(parent):
        raise UserError(f"{path}: directory {parent} does not exist")


def check_directory(path: str) -> None:
    """A directory output files go into: created if missing (not its parents' parents), else it must be one."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"{path}: exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UserError(os_message(path, exc, "cannot create"), exit_code=1) from None


@contextlib.contextmanager
def atomic(path: str, mode: str = "w", encoding: str = "utf-8", newline: str = "") -> Iterator[IO]:
    """Open a temporary file beside ``path`` for writing; on a clean exit it is flushed, synced and renamed
    onto ``path``; on any exception it is removed (``path`` untouched). OSErrors become one-line UserErrors.

    ``newline=""`` by default: the csv module writes its own line ends."""
    check_target(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".part", dir=directory)
    except OSError as exc:
        raise UserError(os_message(path, exc), exit_code=1) from None
    try:
        if "b" in mode:
            fh = os.fdopen(fd, mode)
        else:
            fh = os.fdopen(fd, mode, encoding=encoding, newline=newline)
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        _remove(tmp)
        raise UserError(os_message(path, exc), exit_code=1) from None
    except BaseException:
        _remove(tmp)
        raise


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: read once, at import (setting it to read it is not thread-safe; the process does not change it)
_UMASK = _read_umask()


def _umask() -> int:
    return _UMASK


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
