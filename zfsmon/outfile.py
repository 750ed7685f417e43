"""The one way zfsmon writes an output file (exports, reports, imported recordings' checks): safely.

- :func:`check_target` before anything starts: the directory exists, the name is neither a directory nor a
  symbolic link (a dangling one included: zfsmon runs as root in directories others can write, and a link
  planted at a predictable name must not make it create or overwrite a file elsewhere).
- :func:`atomic` writes into a temporary file in the target's own directory (created ``O_EXCL|O_NOFOLLOW``)
  and renames it over the target only once everything is written and flushed to disk, so a reader never
  sees a half-written file and a failure (disk full, read-only file system, no permission, an error while
  producing the content) leaves neither a partial nor a 0-byte file behind: the earlier file, if any, is
  untouched. A rename replaces a name, it never writes through a link. ``replace=False`` links the finished
  file in instead, which fails if anything has that name (:class:`Taken`): for names zfsmon picks itself.
- :func:`open_append` opens a log zfsmon appends to, never through a link.
- :func:`state_directory` is where zfsmon records when no file is named (XDG state directory;
  /var/lib/zfsmon as root): created 0700, never a link, never one another user could plant names in.
- :class:`Written` is the manifest of the files zfsmon wrote into a directory: only those are replaced or
  removed by a later run.
- :func:`os_message` says what an ``OSError`` means for the file, in one line.

Every failure is a :class:`~zfsmon.errors.UserError` (one line, exit 1 for write failures).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from typing import IO, Callable, Dict, Iterable, Iterator, Mapping, Optional, Tuple

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
    errno.ELOOP: "it is a symbolic link",
}


class Taken(UserError):
    """``atomic(..., replace=False)``: something (a file, a link, a dangling link) already has the name."""


def os_message(path: str, exc: OSError, doing: str = "cannot write") -> str:
    """``PATH: cannot write: the file system is full`` (one line, whatever the error)."""
    why = _WHY.get(exc.errno or 0) or exc.strerror or str(exc)
    return f"{path}: {doing}: {why}"


def refuse_link(path: str) -> None:
    """A symbolic link where zfsmon would write (dangling or not) is refused: root must not follow it."""
    if os.path.islink(path):
        raise UserError(f"{path} is a symbolic link: zfsmon does not write through or over one; "
                        "give the name of a file")


def check_target(path: str) -> None:
    """A file about to be written: its directory must exist and the name must be neither a directory nor a
    symbolic link. Raises UserError (before anything has been started)."""
    parent = os.path.dirname(os.path.abspath(path))
    refuse_link(path)
    if os.path.isdir(path):
        raise UserError(f"{path} is a directory: give a file name")
    if not os.path.isdir(parent):
        raise UserError(f"{path}: directory {parent} does not exist")


def check_directory(path: str) -> None:
    """A directory output files go into: created if missing (not its parents' parents), else it must be one."""
    if os.path.lexists(path) and not os.path.isdir(path):
        raise UserError(f"{path}: exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UserError(os_message(path, exc, "cannot create"), exit_code=1) from None


@contextlib.contextmanager
def atomic(path: str, mode: str = "w", encoding: str = "utf-8", newline: str = "",
           replace: bool = True) -> Iterator[IO]:
    """Open a temporary file beside ``path`` for writing; on a clean exit it is flushed, synced and renamed
    onto ``path`` (``replace=False``: linked to ``path``, :class:`Taken` if the name exists); on any exception
    it is removed (``path`` untouched). OSErrors become one-line UserErrors.

    ``newline=""`` by default: the csv module writes its own line ends."""
    if not replace and os.path.lexists(path):
        raise Taken(f"{path}: exists")
    check_target(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:  # mkstemp: O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, a random name
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
        if replace:
            refuse_link(path)  # again: one may have been planted while the content was produced
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # fails on any existing name, a dangling link included
            except FileExistsError:
                raise Taken(f"{path}: exists") from None
            _remove(tmp)
        _sync_directory(directory)
    except OSError as exc:
        _remove(tmp)
        raise UserError(os_message(path, exc), exit_code=1) from None
    except BaseException:
        _remove(tmp)
        raise


def _sync_directory(directory: str) -> None:
    """The rename itself made durable (a crash after it must not bring the old name back)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a directory; the file itself is synced
    finally:
        os.close(fd)


def open_append(path: str) -> IO[str]:
    """A text log zfsmon appends to (a tee of a child's output): created if missing, never through a symbolic
    link (``O_NOFOLLOW``), and only a regular file. OSErrors become one-line UserErrors."""
    check_target(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        raise UserError(os_message(path, exc), exit_code=1) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device planted at the name
        os.close(fd)
        raise UserError(f"{path}: not a regular file: zfsmon appends only to one", exit_code=1)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8")


#: where root's recordings go when no file is named (the FHS's place for a program's state)
ROOT_STATE_DIR = "/var/lib/zfsmon"


def state_directory(environ: Optional[Mapping[str, str]] = None, root: Optional[bool] = None) -> str:
    """The directory zfsmon records into when no file is named: a user expects state there, not in whatever
    directory the command was started in. A service's ``$STATE_DIRECTORY`` (systemd's ``StateDirectory=``, set
    by the SMF manifest too) when set; as root (``root`` defaults to the effective uid being 0)
    :data:`ROOT_STATE_DIR`; else ``$XDG_STATE_HOME/zfsmon`` (``~/.local/state/zfsmon``; a relative
    ``XDG_STATE_HOME`` is ignored, as the XDG specification says). Created with mode 0700 when missing.

    Refused with a one-line UserError: a symbolic link there (dangling or not), something that is not a
    directory, a directory owned by another user or writable by group or others (names could be planted in
    it between zfsmon's check and its write)."""
    env = os.environ if environ is None else environ
    service = env.get("STATE_DIRECTORY", "").split(":")[0]
    if os.path.isabs(service):
        # the service manager made it (systemd's StateDirectory=; DynamicUser= makes it a link into private/)
        return _checked_state(service, os.stat)
    if os.geteuid() == 0 if root is None else root:
        path = ROOT_STATE_DIR
    else:
        base = env.get("XDG_STATE_HOME", "")
        if not os.path.isabs(base):
            home = os.path.expanduser("~")
            if not os.path.isabs(home):
                raise UserError("no home directory to record into (set XDG_STATE_HOME or give --record/--out FILE)")
            base = os.path.join(home, ".local", "state")
        path = os.path.join(base, "zfsmon")
    if os.path.islink(path):
        raise _linked(path)
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise UserError(os_message(path, exc, "cannot create"), exit_code=1) from None
    if os.path.islink(path):  # planted between the check and the mkdir
        raise _linked(path)
    return _checked_state(path, os.lstat)


def _linked(path: str) -> UserError:
    return UserError(f"{path} is a symbolic link: zfsmon does not record through one (remove it, or name a file "
                     "to record into)")


def _checked_state(path: str, stat_fn: Callable[[str], os.stat_result]) -> str:
    """``path`` if it is a directory of this user that no one else can write into, else a one-line UserError."""
    try:
        st = stat_fn(path)
    except OSError as exc:
        raise UserError(os_message(path, exc, "cannot record into"), exit_code=1) from None
    if stat.S_ISLNK(st.st_mode):
        raise _linked(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UserError(f"{path}: exists and is not a directory")
    if st.st_uid != os.geteuid():
        raise UserError(f"{path}: owned by uid {st.st_uid}, not by this user: zfsmon does not record into it")
    if st.st_mode & 0o022:
        raise UserError(f"{path}: writable by group or others: zfsmon does not record into it "
                        f"(chmod go-w {path})")
    return path


#: a file's identity as zfsmon left it: inode, size, modification time (ns)
Identity = Tuple[int, int, int]


def _identity(st: os.stat_result) -> Identity:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class Written:
    """The files zfsmon wrote into a directory, from a manifest it keeps there (``.zfsmon-export``).

    A later run replaces or removes a file only when the manifest lists it and the file is still as zfsmon left
    it (same inode, size and modification time): a file the user made, or changed since, has another identity
    and is never touched. The manifest is read bounded, only for names the caller asks about, and a damaged
    or foreign one vouches for nothing."""

    NAME = ".zfsmon-export"
    MARKER = "zfsmon-export-manifest 1"
    MAX_BYTES = 64 << 10

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.path = os.path.join(directory, self.NAME)
        self.listed: Dict[str, Identity] = self._read()

    def _read(self) -> Dict[str, Identity]:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return {}
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return {}
            data = fh.read(self.MAX_BYTES + 1)
        lines = data.decode("utf-8", "replace").split("\n")
        if len(data) > self.MAX_BYTES or not lines or lines[0] != self.MARKER:
            return {}
        listed = {}
        for line in lines[1:]:
            parts = line.split(" ", 3)
            if len(parts) == 4 and all(p.isdigit() for p in parts[:3]) and os.sep not in parts[3]:
                listed[parts[3]] = (int(parts[0]), int(parts[1]), int(parts[2]))
        return listed

    def vouches(self, name: str) -> bool:
        """``name`` in the directory is a regular file (not a link) exactly as zfsmon wrote it."""
        want = self.listed.get(name)
        if want is None:
            return False
        try:
            st = os.lstat(os.path.join(self.directory, name))
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and _identity(st) == want

    def remove(self, name: str) -> None:
        """Remove a file the manifest vouches for (a UserError if it cannot be)."""
        path = os.path.join(self.directory, name)
        if not self.vouches(name):
            raise UserError(f"{path}: not written by zfsmon: left as it is", exit_code=1)
        try:
            os.unlink(path)
        except OSError as exc:
            raise UserError(os_message(path, exc, "cannot remove an earlier export's file"), exit_code=1) from None
        del self.listed[name]

    def record(self, names: Iterable[str]) -> None:
        """The manifest rewritten (atomically) to list ``names`` as they are now, and nothing else."""
        listed = {}
        for name in names:
            try:
                listed[name] = _identity(os.lstat(os.path.join(self.directory, name)))
            except OSError:
                continue
        with atomic(self.path) as fh:
            fh.write(self.MARKER + "\n" + "".join(f"{i} {n} {m} {name}\n" for name, (i, n, m) in
                                                  sorted(listed.items())))
        self.listed = listed


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
