"""The textual shapes kstats come in, turned into plain name -> value dicts.

ZFS exports the same named kstats (``arcstats``, ``zil``, ``zfetchstats``,
``vdev_cache_stats``, per-pool ``io``/``objset-*``) in four ways:

* Linux SPL ``/proc/spl/kstat/zfs/NAME``: a header line
  ``KID TYPE FLAGS NDATA DATASIZE CRTIME SNAPTIME`` (times in ns), a column
  line ``name type data`` and one ``name type value`` row per statistic
  (:func:`parse_proc_table`).  Type 7/8 rows hold strings (``dataset_name``).
  The older ``io`` kstat (KSTAT_TYPE_IO) is a header, a line of column names
  and one line of values instead; that shape is read too.  Raw history
  kstats (``txgs``, ``reads``) print their own column line and no header:
  they are tables of rows, not name/value kstats, and are not read here.
* illumos ``kstat -p``: ``module:instance:name:statistic<TAB>value`` lines,
  possibly repeated once per interval by ``kstat -p ... INTERVAL``
  (:func:`parse_kstat_p`, :class:`KstatPBlocks`).
* FreeBSD ``sysctl kstat.zfs.misc.NAME``: ``kstat.zfs.misc.NAME.stat: value``
  (:func:`parse_sysctl`).
* zfs-fuse ``/zfs-kstat/MODULE/NAME/STAT``: one file per statistic holding
  ``value\\n`` (:func:`parse_stat_files`; reading the directory is the
  collector's job, :class:`StatDir`).

Everything here is pure text -> dict except :class:`StatDir`.  The
functions know nothing about which statistics are counters: that is the
metrics table's business.  Malformed input raises :class:`ParseError` naming
the source and line.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from zfsmon.model import Event, EventKind, ParseError, Record
from zfsmon.sources.base import Clock, PolledCollector
from zfsmon.sources.child import StreamCollector, StreamParser
from zfsmon.units import MAX_DIGITS, exact, plain_int, whole

#: SPL kstat data types that hold text rather than numbers: KSTAT_DATA_CHAR (0) and KSTAT_DATA_STRING (7).
_STRING_TYPES = {0, 7}

_INT_RE = re.compile(r"^-?\d+$")
# name (histogram kstats such as dmu_tx_assign have names with spaces: "1 ns"), type, value
_ROW_RE = re.compile(r"^(\S.*?)\s+(\d{1,2})(?:\s+(.*))?$")
_FLOAT_RE = re.compile(r"^-?\d+\.\d+$")


#: text that starts like a number (``nan``, ``1e308``, ``12abc``, ``inf``): not a kstat string value
_NUMBERISH_RE = re.compile(r"^[-+]?(\d|\.\d|nan\b|inf)", re.IGNORECASE)


def to_number(text: str) -> Optional[float]:
    """A kstat value as a number, or None when it is not numeric (``misc``, a dataset name).

    Integers are exact: floats up to 2**53, ints beyond (64-bit counters, int64
    test values) through :func:`zfsmon.units.exact`. A number no kstat can hold
    (more than 40 digits, beyond a float's range) raises ValueError.
    """
    t = text.strip()
    if plain_int(t):  # most kstat values: a plain counter
        return exact(int(t))
    if _INT_RE.match(t):
        return exact(whole(t))
    if _FLOAT_RE.match(t):
        if len(t) > MAX_DIGITS + 20:
            raise ValueError(f"number out of range ({len(t)} characters)")
        return float(t)
    return None


def _number(raw: str, source: str, no: Optional[int], line: str, strict: bool = False) -> Optional[float]:
    """:func:`to_number` for a parser: out of range is a ParseError; with ``strict`` (formats without a type
    column: sysctl, ``kstat -p``) so is text that starts like a number but is not one (``nan``, ``1e308``)."""
    try:
        num = to_number(raw)
    except ValueError as exc:
        raise ParseError(source, no, str(exc), line) from None
    if num is None and strict and _NUMBERISH_RE.match(raw.strip()):
        raise ParseError(source, no, f"not a kstat number: {raw.strip()[:40]!r}", line)
    return num


@dataclass
class KstatHeader:
    """The first line of a Linux SPL kstat file. Times are the kernel's monotonic clock in ns."""

    kid: int
    ks_type: int
    flags: int
    ndata: int
    data_size: int
    crtime_ns: int
    snaptime_ns: int


@dataclass
class KstatTable:
    """One named kstat: numeric values, string values, and the header when the format has one."""

    values: Dict[str, float] = field(default_factory=dict)
    strings: Dict[str, str] = field(default_factory=dict)
    header: Optional[KstatHeader] = None
    #: how many statistic rows the text held (numeric + string), to compare with ``header.ndata``
    rows: int = 0

    def add(self, name: str, num: Optional[float], raw: str, source: str, no: Optional[int], line: str) -> None:
        """One statistic row: a number if it has one, else its text; a name seen twice is a ParseError."""
        if name in self.values or name in self.strings:
            raise ParseError(source, no, f"statistic {name} appears twice", line)
        if num is None:
            self.strings[name] = raw
        else:
            self.values[name] = num
        self.rows += 1


def _lines(text: str) -> Iterator[Tuple[int, str]]:
    yield from enumerate(text.splitlines(), 1)


def parse_header(line: str, source: str, line_no: int = 1) -> KstatHeader:
    parts = line.split()
    if len(parts) != 7 or not all((_INT_RE.match(p) or re.match(r"^0x[0-9a-fA-F]+$", p)) and len(p) <= MAX_DIGITS
                                  for p in parts):
        raise ParseError(source, line_no, "not a kstat header (KID TYPE FLAGS NDATA SIZE CRTIME SNAPTIME)", line)
    nums = [int(p, 16) if p.startswith("0x") else int(p) for p in parts]
    return KstatHeader(*nums)


def parse_proc_table(text: str, source: str = "kstat") -> KstatTable:
    """A Linux ``/proc/spl/kstat/...`` named (``name type data``) or io (columns + values) kstat."""
    table = KstatTable()
    rows = list(_lines(text))
    # tolerate leading blank lines, nothing else
    while rows and not rows[0][1].strip():
        rows.pop(0)
    if not rows:
        raise ParseError(source, None, "empty kstat")
    no, first = rows[0]
    table.header = parse_header(first, source, no)
    body = [(n, ln) for n, ln in rows[1:] if ln.strip()]
    if not body:
        return table  # a header-only kstat (an empty history list): valid, no values
    no, colline = body[0]
    cols = colline.split()
    if cols == ["name", "type", "data"]:
        for no, line in body[1:]:
            parts = line.split()
            if len(parts) == 3 and len(parts[1]) <= 2 and parts[1].isdigit() and parts[1].isascii():
                name, dtype, raw = parts[0], int(parts[1]), parts[2]  # what _ROW_RE reads, without the regex
            else:
                m = _ROW_RE.match(line.strip())
                if not m:
                    raise ParseError(source, no, "expected `name type value`", line)
                name, dtype, raw = m.group(1), int(m.group(2)), (m.group(3) or "").strip()
            num = None if dtype in _STRING_TYPES else _number(raw, source, no, line)
            if num is None and dtype not in _STRING_TYPES:
                raise ParseError(source, no, f"value of {name} is not a number", line)
            table.add(name, num, raw, source, no, line)
        return table
    if table.header.ks_type == 3 and len(body) == 2:  # KSTAT_TYPE_IO: one line of names, one of values
        no, valline = body[1]
        vals = valline.split()
        if len(vals) != len(cols):
            raise ParseError(source, no, f"{len(cols)} columns but {len(vals)} values", valline)
        for c, v in zip(cols, vals):
            num = _number(v, source, no, valline)
            if num is None:
                raise ParseError(source, no, f"value of {c} is not a number", valline)
            table.values[c] = num
        table.rows = len(cols)
        return table
    raise ParseError(source, no, "unknown kstat body (expected `name type data` or an io kstat)", colline)


# --- saved Linux dumps (`cat /proc/spl/kstat/zfs/NAME` once or in a loop) ------------------------------

HEADER_RE = re.compile(r"^\d+ \d+ 0x[0-9a-fA-F]+ \d+ \d+ \d+ \d+\s*$")
#: data key of the info event that says a capture's relative times are seconds since boot (kstat snaptime);
#: its value is the kstat's crtime in ns, which identifies the boot (and module load) the dumps come from
BOOT_CLOCK = "boot_clock"


def head(text: str, n: int = 6) -> List[str]:
    """The non-blank lines among a text's first ``n``: what a sniffer looks at."""
    return [ln for ln in text.splitlines()[:n] if ln.strip()]


def looks_like_proc(text: str, stat: str) -> bool:
    """A Linux kstat dump (header line, ``name type data``) holding statistic ``stat``."""
    first = head(text)
    return (len(first) >= 2 and bool(HEADER_RE.match(first[0])) and first[1].split() == ["name", "type", "data"]
            and bool(re.search(rf"^{re.escape(stat)}\s+\d+\s", text, re.M)))


def proc_dumps(text: str) -> List[Tuple[str, int]]:
    """A capture of one or more Linux kstat dumps, cut at each header line: (dump text, first line number)."""
    dumps: List[Tuple[List[str], int]] = []
    for no, line in _lines(text):
        if HEADER_RE.match(line):
            dumps.append(([], no))
        if dumps:
            dumps[-1][0].append(line)
    return [("\n".join(d) + "\n", no) for d, no in dumps]


def timed_proc_dumps(text: str, where: str, interval: Optional[float],
                     to_records: Callable[[str, float, str], List[Record]]) -> List[Record]:
    """Every dump of a capture through ``to_records(dump, ts, where)``, timed by the kstat's own clock.

    A dump's time is its header's snaptime (seconds since boot): relative, so
    ``zfsmon import`` places it, and dumps of one boot keep their gaps also
    across files (an info event carrying :data:`BOOT_CLOCK`, the kstats'
    crtimes, says so). With ``interval`` given, dump *i* is at ``i * interval``.
    """
    out: List[Record] = []
    crtimes = set()
    for i, (dump, no) in enumerate(proc_dumps(text)):
        header = parse_header(dump.split("\n", 1)[0], where, no)
        ts = header.snaptime_ns / 1e9 if interval is None else i * interval
        crtimes.add(header.crtime_ns)
        out.extend(to_records(dump, ts, f"{where} (dump {i + 1}, line {no})"))
    if not out:
        raise ParseError(where, None, "no kstat dump (no `KID TYPE FLAGS NDATA SIZE CRTIME SNAPTIME` line)")
    if interval is None:
        out.insert(0, Event(min(r.ts for r in out), EventKind.INFO, f"{where}: times are the kstats' snaptime "
                            "(seconds since boot)", source=where, data={BOOT_CLOCK: sorted(crtimes)}))
    return out


def boot_clock(records: Sequence[Record]) -> FrozenSet[int]:
    """The crtimes of the kstats whose snaptime clock (seconds since boot) times the records; empty if none."""
    return frozenset(int(c) for r in records if isinstance(r, Event) and BOOT_CLOCK in r.data
                     for c in r.data[BOOT_CLOCK])  # type: ignore[attr-defined]


#: how a note of :func:`boot_shifts` says to give the time of day instead of guessing it (``zfsmon import``'s way)
START_HINT = "give --start to say when the first was taken"


def boot_shifts(files: Sequence[Tuple[str, Sequence[Record], float]], start: Optional[float] = None,
                hint: str = START_HINT) -> Tuple[Dict[str, float], List[str]]:
    """How far to move each file's relative times so that dumps of one boot keep their gaps across files.

    ``files``: (name, records, modification time). Files timed by snaptime
    that share a kstat (same crtime: same kstat of the same boot) get one
    shift: with ``start``, the earliest dump lands on it; otherwise the latest
    dump lands on its file's modification time (a guess, said in the returned
    notes, with ``hint``). Files of other clocks are not in the result.
    """
    groups: List[Tuple[Set[int], List[Tuple[str, Sequence[Record], float]]]] = []
    for name, records, mtime in files:
        crtimes = boot_clock(records)
        if not crtimes or not records:
            continue
        joined = [g for g in groups if g[0] & crtimes]
        merged: Tuple[Set[int], List[Tuple[str, Sequence[Record], float]]] = (set(crtimes), [(name, records, mtime)])
        for g in joined:
            groups.remove(g)
            merged[0].update(g[0])
            merged[1][:0] = g[1]
        groups.append(merged)
    shifts: Dict[str, float] = {}
    notes: List[str] = []
    for _crtimes, group in groups:
        names = ", ".join(n for n, _r, _m in group)
        if start is not None:
            delta = start - min(r.ts for _n, recs, _m in group for r in recs)
        else:
            last_name, last_recs, mtime = max(group, key=lambda f: max(r.ts for r in f[1]))
            delta = mtime - max(r.ts for r in last_recs)
            notes.append(f"{names}: time of day guessed: the last kstat dump is placed at {last_name}'s "
                         f"modification time ({hint})")
        if len(group) > 1:
            notes.append(f"{names}: placed relative to each other by their kstat snaptime (one boot)")
        for name, _r, _m in group:
            shifts[name] = delta
    return shifts, notes


def split_sysctl_dumps(text: str) -> List[str]:
    """A loop of ``sysctl kstat.zfs.misc.NAME`` runs: a new dump starts when a name comes round again."""
    dumps: List[List[str]] = [[]]
    seen: set = set()
    for line in text.splitlines():
        name = line.split(":", 1)[0]
        if name in seen:
            dumps.append([])
            seen = set()
        seen.add(name)
        dumps[-1].append(line)
    return ["\n".join(d) + "\n" for d in dumps if d]


# --- illumos kstat -p ------------------------------------------------------------------------------

#: statistics every illumos kstat carries besides its data (not measurements)
KSTAT_P_META = ("class", "crtime", "snaptime")

_KSTAT_P_RE = re.compile(r"^([^:\s]+):(\d+):([^:\t]+):([^\t]+)\t(.*)$")
_EPOCH_RE = re.compile(r"^\d{9,11}$")  # `kstat -T u`
_DATE_RE = re.compile(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d( \S+)? \d{4}$")  # `kstat -T d`


@dataclass
class KstatPBlock:
    """One interval of ``kstat -p`` output: ``(module, instance, name)`` -> table."""

    tables: Dict[Tuple[str, int, str], KstatTable] = field(default_factory=dict)
    #: epoch seconds printed by ``kstat -T u`` before the block, if any
    printed_ts: Optional[float] = None
    first_line: int = 0
    #: when the block's first line arrived (streams): the moment the values were read
    arrived: Optional[float] = None

    def find(self, name: str, module: str = "zfs") -> Optional[KstatTable]:
        """The first instance of kstat ``module:*:name``."""
        for (mod, _inst, nm), t in sorted(self.tables.items(), key=lambda kv: kv[0][1]):
            if mod == module and nm == name:
                return t
        return None


class KstatPBlocks:
    """Incremental reader of ``kstat -p [-T u] ... [INTERVAL]``: feed lines, get closed blocks.

    ``kstat -p`` with an interval prints every selected statistic again each
    interval (a blank line and, with ``-T``, a timestamp between them). A block
    closes at a blank line, a timestamp line, or when a statistic already seen
    in the open block shows up again, so output with or without separators is
    read the same way.
    """

    def __init__(self, source: str = "kstat -p") -> None:
        self.source = source
        self._open: Optional[KstatPBlock] = None
        self._pending_ts: Optional[float] = None
        self._line_no = 0

    def feed(self, line: str, ts: Optional[float] = None) -> List[KstatPBlock]:
        """One line; ``ts`` (when it arrived) is kept on the block it opens."""
        self._line_no += 1
        no = self._line_no
        s = line.rstrip("\r\n")
        out: List[KstatPBlock] = []
        if not s.strip():
            out.extend(self._close())
            return out
        if _EPOCH_RE.match(s.strip()):
            out.extend(self._close())
            self._pending_ts = float(s.strip())
            return out
        if _DATE_RE.match(s.strip()):
            out.extend(self._close())  # local-time date without reliable zone: only a separator
            return out
        m = _KSTAT_P_RE.match(s)
        if not m:
            raise ParseError(self.source, no, "expected `module:instance:name:statistic<TAB>value`", s)
        mod, inst, name, stat, raw = m.group(1), int(m.group(2)), m.group(3), m.group(4), m.group(5)
        key = (mod, inst, name)
        blk = self._open
        if blk is not None:
            t = blk.tables.get(key)
            if t is not None and (stat in t.values or stat in t.strings):
                out.extend(self._close())
                blk = None
        if blk is None:
            blk = self._open = KstatPBlock(printed_ts=self._pending_ts, first_line=no, arrived=ts)
            self._pending_ts = None
        t = blk.tables.setdefault(key, KstatTable())
        num = _number(raw, self.source, no, line, strict=True)
        if num is None:
            t.strings[stat] = raw.strip()
        else:
            t.values[stat] = num
        if stat not in KSTAT_P_META:
            t.rows += 1
        return out

    def _close(self) -> List[KstatPBlock]:
        blk, self._open = self._open, None
        return [blk] if blk is not None and blk.tables else []

    def flush(self) -> List[KstatPBlock]:
        """End of input: the open block, whatever it holds (a truncated capture is still data)."""
        return self._close()


def parse_kstat_p(text: str, source: str = "kstat -p") -> List[KstatPBlock]:
    """All blocks of a ``kstat -p`` capture (one per interval; usually one)."""
    reader = KstatPBlocks(source)
    blocks: List[KstatPBlock] = []
    for _no, line in _lines(text):
        blocks.extend(reader.feed(line))
    blocks.extend(reader.flush())
    return blocks


class KstatPStreamParser(StreamParser):
    """``kstat -p ... INTERVAL`` as a stream: each closed block goes through ``to_records(block, ts)``.

    ``ts`` is when the block's first line arrived, so a block that only closes
    when the next interval begins is still stamped with its own moment.
    """

    def __init__(self, to_records: Callable[[KstatPBlock, float], List[Record]], source: str = "kstat -p") -> None:
        self._reader = KstatPBlocks(source)
        self._to_records = to_records

    def _emit(self, blocks: List[KstatPBlock], ts: float) -> List[Record]:
        out: List[Record] = []
        for blk in blocks:
            out.extend(self._to_records(blk, blk.arrived if blk.arrived is not None else ts))
        return out

    def feed(self, line: str, ts: float) -> List[Record]:
        return self._emit(self._reader.feed(line, ts), ts)

    def flush(self, ts: float) -> List[Record]:
        return self._emit(self._reader.flush(), ts)


def timed_blocks(text: str, ts: float, where: str, interval: Optional[float] = None
                 ) -> Iterator[Tuple[KstatPBlock, float]]:
    """Blocks of a ``kstat -p`` capture with their times: ``-T u`` stamps when printed, else ``ts + i * interval``."""
    for i, blk in enumerate(parse_kstat_p(text, where)):
        yield blk, (blk.printed_ts if blk.printed_ts is not None else ts + i * (interval or 0.0))


def kstat_p_table(table: KstatTable) -> KstatTable:
    """A ``kstat -p`` table without its ``class``/``crtime``/``snaptime`` pseudo-statistics."""
    out = KstatTable(rows=table.rows)
    out.values = {k: v for k, v in table.values.items() if k not in KSTAT_P_META}
    out.strings = {k: v for k, v in table.strings.items() if k not in KSTAT_P_META}
    return out


# --- FreeBSD sysctl ---------------------------------------------------------------------------------

_SYSCTL_RE = re.compile(r"^([A-Za-z0-9_.%-]+):(?: (.*)|)$")


def parse_sysctl(text: str, prefix: str = "", source: str = "sysctl") -> KstatTable:
    """``name: value`` lines (``sysctl -q kstat.zfs.misc.arcstats``).

    With ``prefix`` (``"kstat.zfs.misc.arcstats."``) only names under it are
    kept, without the prefix; other lines are ignored, so a capture of a wider
    sysctl tree still reads.
    """
    table = KstatTable()
    for no, line in _lines(text):
        if not line.strip():
            continue
        m = _SYSCTL_RE.match(line.rstrip())
        if not m:
            raise ParseError(source, no, "expected `name: value`", line)
        name, raw = m.group(1), (m.group(2) or "").strip()
        if prefix:
            if not name.startswith(prefix):
                continue
            name = name[len(prefix):]
        if not name:
            raise ParseError(source, no, "empty statistic name", line)
        table.add(name, _number(raw, source, no, line, strict=True), raw, source, no, line)
    return table


# --- zfs-fuse one file per statistic ----------------------------------------------------------------

def parse_stat_files(files: Mapping[str, str], source: str = "kstat dir") -> KstatTable:
    """Statistic name -> file content (``"123\\n"``), as zfs-fuse serves ``/zfs-kstat/MODULE/NAME/``.

    zfs-fuse prints only integer types; anything else reads ``data type N not
    handled`` and is kept as a string, not an error.
    """
    table = KstatTable()
    for name in sorted(files):
        raw = files[name].strip()
        if not name or "/" in name:
            raise ParseError(source, None, f"bad statistic name {name!r}")
        num = _number(raw, f"{source}/{name}", 1, raw[:80])
        if num is None and ("\n" in raw or not raw):
            raise ParseError(f"{source}/{name}", 1, "expected one number", raw[:80] or "(empty)")
        table.add(name, num, raw, source, None, raw)
    return table


#: where a process reopens a file it holds by descriptor (Linux procfs "magic links")
PROC_FD = "/proc/self/fd"


class StatDir:
    """A one-file-per-statistic kstat directory, read again and again (zfs-fuse's arcstats: 53 files a second).

    Each statistic is held by an ``O_PATH`` descriptor and opened afresh through ``/proc/self/fd/N`` for each
    read. zfs-fuse renders a value when a file is opened, so a re-read (``pread``) of an open file returns the
    value of the last open of that file, not the current one; a fresh open by name costs five FUSE requests a
    file (lookup, getattr, open, read, release: its entries have a zero timeout), while a reopen of the held
    inode costs three (open, read, release), and the directory is not opened each poll either. A read is asked
    for the length of the statistic's last whole value, not more: the kernel sends a getattr before a read that
    reaches past the file's length once its attributes have expired (they have, at a poll a second), a fourth
    request a statistic. Counted on the lab (`fuse:fuse_request_send`, `bench/bench_collect.py --breakdown`).

    Each read first looks the directory up by its path (a few lookups, not one per statistic): a directory that
    vanished (the daemon gone, a file system mounted over it) is an error at once, and one that is another now
    (the daemon restarted: a new mount) is listed afresh. What a held descriptor does not see at once: a single
    statistic that vanishes (its inode stays readable until the next listing, which :meth:`read` makes when asked
    to; zfs-fuse's list of statistics is fixed while it runs).

    zfs-fuse gives a file the length of its value at lookup time and renders the value again at read time, so a
    value that gains a digit in between comes back cut short (``100000`` for ``1000000``: a counter that seems to
    fall tenfold); a held statistic keeps its length until it is looked up again. Every value ends in a newline,
    so a read without one is torn (also one asked for the last length, when the value has grown since): it is read
    again by name and in full (a lookup, which gives the inode its new length), and left out if it stays torn after
    ``tries``. A value that has shrunk comes back whole, shorter than asked. Only a number's length is kept: a read
    asked for it that is not one number alone is read again in full (what the parser refuses, it sees whole), and
    a statistic that is not a number is read in full each time; what follows a number of the asked length is first
    seen at the next listing, which reads every statistic in full. The files are read one by one, so the values
    are not one atomic snapshot (unlike a /proc read); at poll intervals of seconds the skew is negligible.
    """

    def __init__(self, path: str, tries: int = 3) -> None:
        self.path = path
        self.tries = tries
        self._held: Optional[Dict[str, int]] = None  # statistic: its O_PATH descriptor
        self._ident: Tuple[int, int] = (0, 0)  # the listed directory's (device, inode)
        self._sizes: Dict[str, int] = {}  # statistic: the length of its last whole value, what its next read asks

    def read(self, relist: bool = False) -> Dict[str, str]:
        """Every statistic's text (raw ``os.read``: at 53 files a second Python's text files cost as much CPU
        as the FUSE requests). ``relist``: list the directory again first. Raises OSError if it is missing, or a
        held statistic cannot be opened (FileNotFoundError when it has gone: list again)."""
        st = os.stat(self.path)
        if relist or self._held is None or (st.st_dev, st.st_ino) != self._ident:
            self._list()
        assert self._held is not None
        out: Dict[str, str] = {}
        sizes = self._sizes
        for name, fd in self._held.items():
            path = f"{PROC_FD}/{fd}"
            want = sizes.get(name, READ_MAX)
            for _ in range(self.tries):
                raw = _read_small(path, want)
                if not raw or _whole(raw, want):  # a directory (None), an empty file, or whole
                    break
                # torn: the kernel keeps the length the file had when it was looked up, so a held statistic whose
                # value gained a digit stays cut short until it is looked up again: by name, in full, from now on
                path, want = os.path.join(self.path, name), READ_MAX
            else:
                sizes.pop(name, None)
                continue  # torn every time: better no value this poll than a wrong one
            if raw and _number_line(raw):
                sizes[name] = len(raw)
            else:  # text, an empty file, a directory: read in full next time
                sizes.pop(name, None)
            if raw is not None:
                out[name] = raw.decode("ascii", "replace")
        return out

    def _list(self) -> None:
        self.close()
        self._sizes = {}
        held: Dict[str, int] = {}
        dfd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            st = os.fstat(dfd)
            self._ident = (st.st_dev, st.st_ino)
            for name in sorted(os.listdir(dfd)):
                held[name] = os.open(name, os.O_PATH, dir_fd=dfd)  # a lookup, no open: no value rendered
        except OSError:
            for fd in held.values():
                os.close(fd)
            raise
        finally:
            os.close(dfd)
        self._held = held

    def close(self) -> None:
        """Let the held statistics go (the next :meth:`read` lists the directory); safe to call twice."""
        held, self._held = self._held, None
        for fd in (held or {}).values():
            try:
                os.close(fd)
            except OSError:
                pass

    def __del__(self) -> None:
        self.close()


def _number_line(raw: bytes) -> bool:
    """One integer and its newline, as zfs-fuse prints a statistic."""
    return raw.endswith(b"\n") and raw[:-1].lstrip(b"-").isdigit()


def _whole(raw: bytes, asked: int) -> bool:
    """Whether a statistic's read is its whole value: it ends in its newline, and, asked for less than in full
    (the last number's length), is one number alone, so that a file holding more than a number of that length
    (text, more lines) is read again in full and its parser sees all of it."""
    return _number_line(raw) if asked < READ_MAX else raw.endswith(b"\n")


#: the most a statistic's file is read for (a zfs-fuse value is a number or ``data type N not handled``)
READ_MAX = 200


def _read_small(path: str, size: int = READ_MAX) -> Optional[bytes]:
    """Up to ``size`` bytes of a file in one read, or None for a directory."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, size)
    except IsADirectoryError:
        return None
    finally:
        os.close(fd)


# --- collector-side helpers (I/O) -------------------------------------------------------------------

def run_text(argv: List[str], timeout: float = 10.0) -> str:
    """Run a short command (``sysctl``, ``kstat``) and return its stdout.

    Failures come back as :class:`OSError` (what collectors already turn into
    error events): a missing program, a non-zero exit with its last stderr
    line, or a command that hangs past ``timeout``.
    """
    try:
        proc = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise OSError(f"`{' '.join(argv)}` took longer than {timeout:g}s") from exc
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        raise OSError(f"`{' '.join(argv)}` failed: {err[-1] if err else f'exit status {proc.returncode}'}")
    return proc.stdout


#: a pure parser bound to a source: (text, ts, source name, where the text came from) -> records
TextParser = Callable[[str, float, str, str], List[Record]]


class KstatFileCollector(PolledCollector):
    """Reads one kstat file (``/proc/spl/kstat/zfs/NAME``) per poll: one read is one consistent snapshot."""

    def __init__(self, name: str, path: str, parse: TextParser, clock: Clock = time.time) -> None:
        super().__init__(clock)
        self.name = name
        self.path = path
        self._parse = parse

    def read_text(self) -> str:
        with open(self.path, encoding="ascii", errors="replace") as fh:
            return fh.read()

    def parse(self, text: str, ts: float) -> List[Record]:
        return self._parse(text, ts, self.name, self.path)


class CommandCollector(PolledCollector):
    """Runs a short command (``sysctl -q kstat.zfs.misc.NAME``) per poll."""

    def __init__(self, name: str, argv: List[str], parse: TextParser, clock: Clock = time.time) -> None:
        super().__init__(clock)
        self.name = name
        self.argv = list(argv)
        self._parse = parse

    def read_text(self) -> str:
        return run_text(self.argv)

    def parse(self, text: str, ts: float) -> List[Record]:
        return self._parse(text, ts, self.name, " ".join(self.argv))


def kstat_p_collector(name: str, kstat: str, interval: float,
                      block_records: Callable[[KstatPBlock, float], List[Record]],
                      clock: Clock = time.time) -> StreamCollector:
    """One persistent ``kstat -p KSTAT INTERVAL`` child (illumos); each printed block goes to ``block_records``."""
    ival = str(max(1, int(round(interval))))  # kstat takes whole seconds
    parser = KstatPStreamParser(block_records, f"kstat -p {kstat}")
    return StreamCollector(["kstat", "-p", kstat, ival], parser, name, clock)
