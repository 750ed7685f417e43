"""Follow someone else's soak: its tee'd pgbench output, its ``--log`` files or fio's JSON output, as a collector.

Each file is followed like ``tail -F`` (:mod:`zfsmon.sources.follow`); what
kind of file it is (pgbench's printed text, a per-transaction log, an
aggregate log) is recognised from its first line. Log files of several
pgbench threads share one log parser, which merges their intervals.

``from_start`` imports what a file already holds. Log lines carry epoch
timestamps; printed text usually does not, so its runs are laid end to end
(``pause`` seconds apart, as in ``pgbench -T 58; sleep 2``) ending at the
file's modification time, and an info event says the times are estimated.

fio's output (``fio JOB --output-format=json+ --status-interval=N
--output=FILE``) is a stream of JSON documents, recognised by its first line
``{`` (or its head naming ``"fio version"``); every document carries its own
epoch time, so ``from_start`` needs no estimate.
"""

from __future__ import annotations

import os
import time
from typing import Dict, List, Optional, Sequence

from zfsmon.defaults import ATTACH_FIO_JSON, ATTACH_LOG, ATTACH_TEXT
from zfsmon.model import Event, EventKind, ParseError, Record
from zfsmon.names import FIO, PGBENCH
from zfsmon.sources.base import Clock, Collector
from zfsmon.sources.child import StreamParser
from zfsmon.sources.detect import shift
from zfsmon.sources.fio.json_output import FioJsonStreamParser
from zfsmon.sources.fio.json_output import looks_like as looks_like_fio
from zfsmon.sources.follow import Follower
from zfsmon.sources.pgbench.log import PgbenchLogParser, detect_log_format
from zfsmon.sources.pgbench.text import PgbenchTextParser

TEXT, LOG, FIO_JSON = ATTACH_TEXT, ATTACH_LOG, ATTACH_FIO_JSON


def sniff(path: str, limit: int = 65536) -> Optional[str]:
    """'text', 'log' or 'fio' from the head of a file; None if empty or missing."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(limit)
    except OSError:
        return None
    if looks_like_fio(head):
        return FIO_JSON
    for line in head.splitlines():
        fmt = detect_log_format(line)
        if fmt is not None:
            return TEXT if fmt == "text" else LOG
    return None


class AttachCollector(Collector):
    """Polls followers of one or more files and parses their new lines.

    Each file's records and notes carry the source its text is (``pgbench``, or ``fio`` for fio's JSON): the
    dashboard shows a file's errors on the panel of what it follows. ``name`` is ``fio`` when every file given is
    fio's (as sniffed at :meth:`start`), else ``pgbench``.
    """

    name = PGBENCH

    def __init__(self, paths: Sequence[str], from_start: bool = False, fmt: Optional[str] = None,
                 pause: float = 2.0, aggregate_interval: Optional[float] = None,
                 tx_extra: Optional[Sequence[str]] = None, clock: Clock = time.time) -> None:
        super().__init__(clock)
        self.paths = [str(p) for p in paths]
        self.from_start = from_start
        self.fmt = fmt
        self.pause = pause
        self._log_parser = PgbenchLogParser(source=self.name, interval=aggregate_interval, tx_extra=tx_extra)
        self._followers: Dict[str, Follower] = {}
        self._parsers: Dict[str, Optional[StreamParser]] = {}
        self._pending: List[Record] = []
        self.lines = 0

    def _parser_for(self, path: str, fmt: str) -> StreamParser:
        if fmt == LOG:
            return self._log_parser
        if fmt == FIO_JSON:
            return FioJsonStreamParser()
        return PgbenchTextParser(source=self.name)

    def start(self) -> None:
        for path in self.paths:
            fmt = self.fmt or sniff(path)
            offset: Optional[int] = None
            if self.from_start and fmt == TEXT:
                offset = self._import_text(path)
            self._parsers[path] = self._parser_for(path, fmt) if fmt else None
            self._followers[path] = Follower(path, from_start=self.from_start, start_offset=offset)
        if self._parsers and all(isinstance(p, FioJsonStreamParser) for p in self._parsers.values()):
            self.name = FIO

    def _source(self, path: str) -> str:
        """The source a file's records are: fio's JSON is ``fio``; pgbench's text or logs (or not known yet) is
        ``pgbench``."""
        return FIO if isinstance(self._parsers.get(path), FioJsonStreamParser) else PGBENCH

    def _import_text(self, path: str) -> Optional[int]:
        """Parse the text already in ``path`` on a virtual clock and pin it to the file's mtime."""
        try:
            with open(path, "rb") as fh:
                data = fh.read()
            mtime = os.stat(path).st_mtime
        except OSError as exc:
            self._pending.append(self._error(f"pgbench: cannot read {path}: {exc.strerror or exc}"))
            return None
        cut = data.rfind(b"\n") + 1  # an unterminated last line is left for the follower
        parser = PgbenchTextParser(source=self.name, virtual_clock=True, pause=self.pause)
        recs: List[Record] = []
        for i, line in enumerate(data[:cut].decode("utf-8", "replace").splitlines()):
            try:
                recs.extend(parser.feed(line, 0.0))
            except ParseError as exc:
                recs.append(Event(0.0, EventKind.ERROR, f"pgbench: {exc}", source=self.name))
            self.lines = i + 1
        recs.extend(parser.flush(0.0))
        recs.extend(parser.close_run(0.0, "still running when imported; followed from here"))
        if recs and not parser.wallclock:
            last = max(r.ts for r in recs)
            recs = shift(recs, mtime - last)
            recs.append(Event(mtime, EventKind.INFO,
                              f"pgbench: imported {parser.run} runs from {path}; the file has no timestamps, so "
                              f"their times are estimated (run durations, {self.pause:g} s pauses, ending at the "
                              f"file's modification time)", source=self.name))
        self._pending.extend(recs)
        return cut

    def _error_of(self, path: str, message: str) -> Event:
        """:meth:`Collector._error` (once per distinct message), as the source ``path``'s text is."""
        ev = self._error(message)
        return Event(ev.ts, ev.kind, ev.text, source=self._source(path), data=ev.data)

    def poll(self) -> List[Record]:
        out, self._pending = self._pending, []
        for path, follower in self._followers.items():
            chunk = follower.poll()
            ts = self.clock()
            for note in chunk.notes:
                src = self._source(path)
                out.append(Event(ts, EventKind.INFO, f"{src}: {note}", source=src))
                if "truncated" in note or "rewritten" in note or "rotated" in note:
                    parser = self._parsers.get(path)
                    if isinstance(parser, PgbenchTextParser):
                        out.extend(parser.flush(ts))
                        out.extend(parser.close_run(ts, "log file was truncated or replaced"))
            for line in chunk.lines:
                self.lines += 1
                parser = self._parsers.get(path)
                if parser is None:
                    if line.rstrip() == "{":  # fio's JSON starts so; pgbench never prints such a line
                        parser = self._parsers[path] = self._parser_for(path, FIO_JSON)
                    else:
                        fmt = detect_log_format(line)
                        if fmt is None:
                            continue
                        parser = self._parsers[path] = self._parser_for(path, TEXT if fmt == "text" else LOG)
                try:
                    out.extend(parser.feed(line, ts))
                except ParseError as exc:
                    out.append(self._error_of(path, f"{self._source(path)}: {exc}"))
        return out

    def stop(self) -> None:
        ts = self.clock()
        flushed: List[Record] = []
        seen = set()
        for path, parser in self._parsers.items():
            if parser is None or id(parser) in seen:
                continue
            seen.add(id(parser))
            try:
                flushed.extend(parser.flush(ts))
            except ParseError as exc:
                flushed.append(self._error_of(path, f"{self._source(path)}: {exc}"))
        self._pending.extend(flushed)
        for f in self._followers.values():
            f.close()
