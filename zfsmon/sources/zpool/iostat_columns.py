"""The column layout of ``zpool iostat`` tables: two-line headers, histogram headers, and headerless ``-H`` rows.

Columns are taken from the header, never assumed: the old header (``used
avail`` or ``alloc free``), the 0.7+ column groups of ``-l`` (waits) and
``-q`` (queues) whose sets grew over versions (``trim``, ``rebuild``), ``-c``
script columns (kept as columns nobody reads) and the ``-r``/``-w`` histogram
headers. ``-H`` prints no header: its columns are inferred from the field
count and the flags the run was given (:func:`scripted_header`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from zfsmon.model import ParseError
from zfsmon.units import parse_count, parse_duration_ns, parse_size

#: the ``source`` of the records, and where parse errors say they come from
RECORD_SOURCE = "zpool"

#: the first column of a histogram table's second header line -> the histogram's metric prefix
HISTOGRAM_KINDS = {"req_size": "rq", "latency": "lat"}


@dataclass(frozen=True)
class Column:
    """One value column: the metric it fills (None: a ``-c`` script column we do not read) and its unit reader."""

    metric: Optional[str]
    parse: Callable[[str], float] = parse_count


@dataclass(frozen=True)
class Header:
    """The columns of a stats table, or of a histogram table (``histogram`` = "rq"/"lat", ``owner`` its vdev)."""

    columns: Tuple[Column, ...]
    histogram: Optional[str] = None
    owner: str = ""

    @property
    def core(self) -> int:
        """Columns every row has (script columns come last and only rows with script output show them)."""
        n = len(self.columns)
        while n and self.columns[n - 1].metric is None:
            n -= 1
        return n


_PAIR_NAMES = {
    ("capacity", "alloc"): ("alloc", parse_size), ("capacity", "free"): ("free", parse_size),
    ("capacity", "used"): ("alloc", parse_size), ("capacity", "avail"): ("free", parse_size),
    ("operations", "read"): ("read_ops", parse_count), ("operations", "write"): ("write_ops", parse_count),
    ("bandwidth", "read"): ("read_bw", parse_size), ("bandwidth", "write"): ("write_bw", parse_size),
}


def _any_number(text: str) -> float:
    """A column we have no unit for (a future group): a time if it has a time unit, else a count."""
    try:
        return parse_count(text)
    except ValueError:
        return parse_duration_ns(text)


def _stats_column(group: Optional[str], sub: str) -> Column:
    if group is None:
        return Column(None)  # `-c script` output
    known = _PAIR_NAMES.get((group, sub))
    if known:
        return Column(known[0], known[1])
    if sub == "wait":
        return Column(f"{group}_wait", parse_duration_ns)
    if group.endswith("_wait"):
        return Column(f"{group}_{sub}", parse_duration_ns)
    if sub in ("pend", "activ"):
        return Column(f"{group}_{sub}", parse_count)
    return Column(f"{group}_{sub}", _any_number)


def _pair_up(groups: Sequence[str], subs: Sequence[str], source: str, line_no: int, line: str
             ) -> List[Tuple[Optional[str], str]]:
    """Match the group labels of header line 1 with the sub-column labels of line 2.

    A group spans two sub-columns (``read write``, ``alloc free``, ``pend activ``,
    ``ind agg``) or one (``scrub`` over ``wait``); sub-columns left over after
    the last group stand alone (``-c`` columns; ``scrub``/``trim`` in ``-w``).
    """
    out: List[Tuple[Optional[str], str]] = []
    i = 0
    for g in groups:
        if i >= len(subs):
            raise ParseError(source, line_no, f"column group {g!r} has no sub-columns", line)
        if subs[i] == "wait":
            out.append((g, "wait"))
            i += 1
            continue
        if i + 1 >= len(subs):
            raise ParseError(source, line_no, f"column group {g!r} lacks its second sub-column", line)
        out.extend([(g, subs[i]), (g, subs[i + 1])])
        i += 2
    out.extend((None, s) for s in subs[i:])
    return out


def parse_header(line1: str, line2: str, source: str = RECORD_SOURCE, line_no: int = 0) -> Header:
    """The two header lines of a stats table (``capacity operations ...`` / ``pool alloc free ...``) or a histogram."""
    top, sub = line1.split(), line2.split()
    if not sub:
        raise ParseError(source, line_no, "empty header line", line2)
    histo = HISTOGRAM_KINDS.get(sub[0])
    if histo:
        if not top:
            raise ParseError(source, line_no - 1, "histogram header without the vdev name", line1)
        pairs = _pair_up(top[1:], sub[1:], source, line_no, line2)
        cols = []
        for g, s in pairs:
            name = f"{histo}_{g}_{s}" if g else f"{histo}_{s}"
            cols.append(Column(name, parse_count))
        return Header(tuple(cols), histo, top[0])
    if sub[0] != "pool":
        raise ParseError(source, line_no, "expected `pool` as the first column", line2)
    pairs = _pair_up(top, sub[1:], source, line_no, line2)
    if not pairs or pairs[0][0] is None:
        raise ParseError(source, line_no, "header has no column groups", line2)
    return Header(tuple(_stats_column(g, s) for g, s in pairs))


def _names_to_header(names: Sequence[str]) -> Header:
    cols = []
    for n in names:
        if n in ("alloc", "free", "read_bw", "write_bw"):
            cols.append(Column(n, parse_size))
        elif "wait" in n:
            cols.append(Column(n, parse_duration_ns))
        else:
            cols.append(Column(n, parse_count))
    return Header(tuple(cols))


_DEFAULT = ["alloc", "free", "read_ops", "write_ops", "read_bw", "write_bw"]
# The -l and -q column sets seen in captures: 0.7 (scrub), 0.8 (+trim) and 2.x (+rebuild).
_LAT_BASE = [f"{w}_{d}" for w in ("total_wait", "disk_wait", "syncq_wait", "asyncq_wait") for d in ("read", "write")]
_LAT_SETS = [_LAT_BASE + ["scrub_wait"], _LAT_BASE + ["scrub_wait", "trim_wait"],
             _LAT_BASE + ["scrub_wait", "trim_wait", "rebuild_wait"]]
_Q_BASE = ["syncq_read", "syncq_write", "asyncq_read", "asyncq_write", "scrubq_read"]
_Q_SETS = [[f"{q}_{s}" for q in qs for s in ("pend", "activ")]
           for qs in (_Q_BASE, _Q_BASE + ["trimq_write"], _Q_BASE + ["trimq_write", "rebuildq_write"])]


_TIME_RE = re.compile(r"^\d+(?:\.\d+)?(ns|us|ms|s)$")


def _looks_latency(values: Sequence[str]) -> Optional[bool]:
    """Whether extra ``-H`` columns hold latencies (True), queue counts (False) or cannot say (None).

    Latencies print a time unit (``838us``) or ``-`` (no I/O to average); with
    ``-p`` they are nanoseconds, so anything from 10 000 up is a latency, while
    queue columns are counts of I/Os waiting or active (never ``-``, small).
    """
    if any(v == "-" or _TIME_RE.match(v) for v in values):
        return True
    try:
        nums = [parse_count(v) for v in values]
    except ValueError:
        return None
    if any(n >= 10000 for n in nums):
        return True
    return None


def scripted_fits(n_values: int, flags: str = "") -> List[Tuple[str, List[str]]]:
    """Every (``l``/``q`` letters, column names) a headerless row of ``n_values`` values can be.

    ``-l`` and ``-q`` together come from one zpool version, so their sets pair
    up by version; ``flags`` (the run's letters, when known) narrows the choice.
    """
    return [(letters, list(cols)) for letters, cols in _fits(n_values, "".join(sorted(set(flags) & {"l", "q"})))]


@functools.lru_cache(maxsize=256)
def _fits(n_values: int, flags: str) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    out: List[Tuple[str, List[str]]] = []
    said = set(flags) & {"l", "q"}
    combos: List[Tuple[str, List[str]]] = [("", [])]
    combos += [("l", la) for la in _LAT_SETS] + [("q", q) for q in _Q_SETS]
    combos += [("lq", la + q) for la, q in zip(_LAT_SETS, _Q_SETS)]
    for letters, cols in combos:
        if said and set(letters) != said:
            continue
        if 6 + len(cols) == n_values and (letters, _DEFAULT + cols) not in out:
            out.append((letters, _DEFAULT + cols))
    return tuple((letters, tuple(cols)) for letters, cols in out)


def infer_flags(rows: Sequence[Sequence[str]]) -> Optional[str]:
    """The ``l``/``q`` letters of headerless rows (values only, no name), when their counts or values tell."""
    choices: Optional[set] = None
    for values in rows:
        fits = scripted_fits(len(values))
        if len(fits) == 1:
            return fits[0][0]
        if not fits:
            continue
        verdict = _looks_latency(values[6:])
        if verdict is not None:
            kept = {f for f, _ in fits if ("l" in f) == verdict}
            choices = kept if choices is None else choices & kept
            if choices and len(choices) == 1:
                return next(iter(choices))
    return None


def scripted_header(n_values: int, flags: str = "", source: str = RECORD_SOURCE, line_no: int = 0,
                    line: Optional[str] = None, values: Sequence[str] = ()) -> Header:
    """Columns of headerless ``-H`` rows from their count and the ``-l``/``-q`` flags of the run.

    Without flags every combination is tried; where several fit (16 values:
    ``-l`` of 0.8-2.1 or ``-q`` of 0.7) the row's ``values`` decide if they
    can (latencies carry time units, ``-`` or nanoseconds); otherwise it is a
    ParseError that names the option to say it.
    """
    fits = scripted_fits(n_values, flags)
    if len(fits) > 1 and values:
        verdict = _looks_latency(values[6:])
        if verdict is not None:
            fits = [f for f in fits if ("l" in f[0]) == verdict]
    if len(fits) != 1:
        why = ("matches no known column set" if not fits else
               "is ambiguous: -l or -q? (say it: --iostat-flags l or --iostat-flags q)")
        raise ParseError(source, line_no, f"headerless row with {n_values} values {why}", line)
    return _names_to_header(fits[0][1])
