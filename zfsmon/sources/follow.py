"""Follow a growing file like ``tail -F``: new complete lines on each poll, across truncation and rotation.

Someone else's soak writes ``pgbench ... | tee soak.log`` (or pgbench's own
``--log`` files); ``zfsmon attach`` must follow it for hours without caring
what the writer does to the file:

* the file does not exist yet: wait for it, then read it from its start;
* truncated (``: > soak.log``, or ``pgbench > soak.log`` again): start over at 0.
  A rewrite that outgrows the old size between two polls is caught by
  re-reading the last bytes we consumed: if they changed, the file was rewritten;
* rotated (renamed away, new file created): drain the old file, then read the new one from its start;
* a partial last line is kept until its newline arrives (a line split across two writes is one line).

No threads, no inotify: :meth:`Follower.poll` is cheap and non-blocking, the caller decides how often.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import List, Optional

_CHECK_BYTES = 64  # how many already-read bytes are re-checked to notice a rewrite
_MAX_READ = 8 * 1024 * 1024  # per poll, so a huge backlog never stalls the sampler
_MAX_LINE = 1 << 20  # a longer line (no line end in sight: a binary file, /dev/zero) is left out, not buffered


@dataclass
class Chunk:
    """What one poll found: complete lines (without newline) and plain-words notes about the file."""

    lines: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


class Follower:
    """Polled reader of one path. ``from_start``: also read what the file already holds."""

    def __init__(self, path: str, from_start: bool = False, encoding: str = "utf-8",
                 start_offset: Optional[int] = None) -> None:
        self.path = str(path)
        self.encoding = encoding
        self._fd: Optional[int] = None
        self._ino: Optional[tuple] = None
        self._pos = 0
        self._buf = b""
        self._tail = b""  # the last bytes consumed, to notice a rewrite
        self._first_open = True
        self._from_start = from_start
        self._start_offset = start_offset
        self._waiting_noted = False
        self.bytes_read = 0
        self._closed = False
        self._early = Chunk()
        self._open(self._early)  # "from now on" means from construction, not from the first poll

    # ---------------------------------------------------------------------------------------------------------
    def _open(self, chunk: Chunk) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            if not self._waiting_noted:
                chunk.notes.append(f"{self.path}: does not exist (yet); waiting for it")
                self._waiting_noted = True
            self._first_open = False  # a file that appears later is read from its start
            return False
        except OSError as exc:
            chunk.notes.append(f"{self.path}: cannot open: {exc.strerror or exc}")
            return False
        st = os.fstat(fd)
        self._fd, self._ino = fd, (st.st_dev, st.st_ino)
        if self._first_open and self._start_offset is not None:
            self._pos = min(self._start_offset, st.st_size)
        elif self._first_open and not self._from_start:
            self._pos = st.st_size  # like tail -f: only what is written from now on
        else:
            self._pos = 0
        self._first_open = False
        self._buf = b""
        self._tail = self._pread_tail() if self._pos else b""
        if self._waiting_noted:
            chunk.notes.append(f"{self.path}: appeared; following it")
            self._waiting_noted = False
        return True

    def _pread_tail(self) -> bytes:
        assert self._fd is not None
        n = min(self._pos, _CHECK_BYTES)
        try:
            return os.pread(self._fd, n, self._pos - n)
        except OSError:
            return b""

    def _close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd = None
        self._ino = None

    def _drain(self, chunk: Chunk, final: bool = False) -> None:
        """Read what is there; complete lines go to ``chunk``; ``final`` also flushes an unterminated tail."""
        assert self._fd is not None
        budget = _MAX_READ
        while budget > 0:
            try:
                data = os.pread(self._fd, min(1 << 20, budget), self._pos)
            except OSError as exc:
                chunk.notes.append(f"{self.path}: read failed: {exc.strerror or exc}")
                return
            if not data:
                break
            self._pos += len(data)
            self.bytes_read += len(data)
            budget -= len(data)
            self._tail = (self._tail + data)[-_CHECK_BYTES:]
            self._buf += data
        parts = self._buf.split(b"\n")
        if getattr(self, "_skipping", False):  # the rest of a line too long to keep, up to its line end
            if len(parts) == 1:
                parts = [b""]
            else:
                parts, self._skipping = parts[1:], False
        *complete, self._buf = parts
        if len(self._buf) > _MAX_LINE:
            chunk.notes.append(f"{self.path}: a line longer than {_MAX_LINE >> 20} MiB left out")
            self._buf, self._skipping = b"", True
        chunk.lines.extend(c.decode(self.encoding, "replace").rstrip("\r") for c in complete)
        if final and self._buf:
            chunk.lines.append(self._buf.decode(self.encoding, "replace").rstrip("\r"))
            self._buf = b""

    def _rewritten(self) -> bool:
        """The bytes we consumed last are no longer there: the file was truncated and written again."""
        if not self._tail or self._pos < len(self._tail):
            return False
        return self._pread_tail() != self._tail

    # ---------------------------------------------------------------------------------------------------------
    def poll(self) -> Chunk:
        """Everything new since the last poll."""
        chunk, self._early = self._early, Chunk()
        if self._closed:
            return chunk
        if self._fd is None and not self._open(chunk):
            return chunk
        assert self._fd is not None
        try:
            st = os.fstat(self._fd)
        except OSError as exc:
            chunk.notes.append(f"{self.path}: {exc.strerror or exc}")
            self._close()
            return chunk
        if st.st_size < self._pos:
            chunk.notes.append(f"{self.path}: truncated (size {st.st_size} < offset {self._pos}); reading from start")
            self._reset_to_start()
        elif self._rewritten():
            chunk.notes.append(f"{self.path}: rewritten in place; reading from start")
            self._reset_to_start()
        self._drain(chunk)
        try:
            pst = os.stat(self.path)
            same = (pst.st_dev, pst.st_ino) == self._ino
        except FileNotFoundError:
            same = None  # moved away and not (yet) recreated: keep reading the old one
        except OSError:
            same = True
        if same is False:
            self._drain(chunk, final=True)
            chunk.notes.append(f"{self.path}: replaced by a new file (rotated); following the new file")
            self._close()
            self._first_open = False
            if self._open(chunk):
                self._drain(chunk)
        return chunk

    def _reset_to_start(self) -> None:
        self._skipping = False
        self._pos = 0
        self._buf = b""
        self._tail = b""

    @property
    def offset(self) -> int:
        return self._pos

    def close(self) -> None:
        """Stop following: later polls return nothing (they must not start over from the beginning)."""
        self._closed = True
        self._close()

    def __enter__(self) -> Follower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
