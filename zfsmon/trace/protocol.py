"""The zfsmon trace protocol (docs/tracing.md): text in, samples and events out.

Every D and bpftrace script in ``dtrace/`` and ``bpftrace/`` prints the same
line-oriented protocol, so one parser serves both and a recorded output can be
replayed. The shape follows what both languages print without help:
bpftrace's ``print(@map)`` writes ``@map[k1, k2]: value`` lines, and D's
``printa("@map[%s, %s]: %@d\\n", @map)`` writes the same, so the histograms
travel as explicit buckets with no ASCII art to scrape::

    zfsmon-trace 1 vdevlat entity=devt interval=1
    interval 1795332009.618809 1
    @lat[7340035, read, 1280]: 17
    @max[7340035, read]: 2113536
    end
    slow 1795332009.5 7340035 read 52000000 8192 pid=812 comm=postgres

Parsing is pure: which device a raw entity token names is a lookup table the
caller hands in (see :mod:`zfsmon.trace.resolve`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from zfsmon.model import Entity, Event, EventKind, Kind, ParseError, Record, Sample
from zfsmon.sources.child import StreamParser
from zfsmon.trace.histogram import Histogram, is_bucket

VERSION = 1
HEADER = "zfsmon-trace"
#: how the scripts name entities: a kernel dev_t number, a file descriptor, or a name (device path, pool,
#: mountpoint, "arc"); keys are separated by ", " so device paths with commas (illumos) survive
ENTITY_KINDS = ("devt", "fd", "name")
#: map name -> number of keys it carries (the last key of @lat is the bucket)
MAPS = {"lat": 3, "max": 2, "sum": 2, "bytes": 2, "count": 2}
#: with the header option ``totals=1`` these maps print totals since the script started (the D scripts: DTrace for
#: Linux clears a map by generation, and events between its snapshot and the clear are lost); @max is per interval
TOTAL_MAPS = ("lat", "sum", "bytes", "count")
#: how many distinct map lines a ``totals=1`` stream may carry (each one's last total is kept)
MAX_TOTALS = 100_000
PERCENTILES = ((50, 0.50), (95, 0.95), (99, 0.99))

_MAP_LINE = re.compile(r"^@(\w+)(?:\[(.*)\])?:\s*(-?\d+)\s*$")
_NOISE = re.compile(r"^Attaching \d+ probes?\.\.\.$")

#: (entity kind, raw token) -> the Entity it names; None means "not a device we know"
Resolver = Callable[[str, str], Optional[Entity]]


def devt_name(token: str) -> str:
    """A Linux kernel ``dev_t`` (major << 20 | minor, as block tracepoints report it) as ``MAJ:MIN``."""
    dev = int(token)
    return f"{dev >> 20}:{dev & 0xFFFFF}"


def default_entity(kind: str, token: str) -> Entity:
    name = devt_name(token) if kind == "devt" else f"fd{token}" if kind == "fd" else token
    return Entity(Kind.TRACE, name)


@dataclass
class TraceInterval:
    """Everything one ``interval`` ... ``end`` block said."""

    script: str
    ts: float
    seconds: float
    hists: Dict[Tuple[str, str], Histogram] = field(default_factory=dict)
    bytes: Dict[Tuple[str, str], int] = field(default_factory=dict)
    counts: Dict[Tuple[str, str], int] = field(default_factory=dict)

    def hist(self, ent: str, op: str) -> Histogram:
        return self.hists.setdefault((ent, op), Histogram())

    def entities(self) -> List[str]:
        keys = set(k[0] for k in self.hists) | set(k[0] for k in self.bytes) | set(k[0] for k in self.counts)
        return sorted(keys)


def latency_metrics(op: str, h: Histogram, seconds: float, nbytes: Optional[int] = None) -> Dict[str, float]:
    """The per-op metric names every view and the metrics table use (``read_lat_p99_ns``, ...)."""
    n = h.count
    out: Dict[str, float] = {f"{op}_ops": float(n), f"{op}_ops_s": n / seconds if seconds > 0 else 0.0}
    if nbytes is not None:
        out[f"{op}_bytes"] = float(nbytes)
    if n:
        for pct, q in PERCENTILES:
            out[f"{op}_lat_p{pct}_ns"] = h.percentile(q)
        out[f"{op}_lat_max_ns"] = float(h.top())
        mean = h.mean()
        if mean is not None:
            out[f"{op}_lat_mean_ns"] = mean
        for lo, c in h.sorted():
            out[f"{op}_hist_{lo}"] = float(c)
    return out


def hist_from_metrics(metrics: Dict[str, float], op: str) -> Histogram:
    """Rebuild a histogram from a stored sample (``<op>_hist_<lo>`` metrics), e.g. for replay."""
    prefix = f"{op}_hist_"
    h = Histogram()
    for name, value in metrics.items():
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            h.add(int(name[len(prefix):]), int(value))
    if f"{op}_lat_max_ns" in metrics:
        h.max = int(metrics[f"{op}_lat_max_ns"])
    return h


class TraceParser(StreamParser):
    """Incremental parser of one script's output; emits samples at each ``end``."""

    def __init__(self, source: str = "trace", resolve: Optional[Resolver] = None, rollup: bool = True) -> None:
        self.source = source
        self.resolve = resolve
        self.rollup = rollup
        self.script = ""
        self.options: Dict[str, str] = {}
        self.entity_kind = "name"
        self.line_no = 0
        self.block: Optional[TraceInterval] = None
        self.intervals = 0
        self.totals: Optional[Dict[Tuple[str, str], int]] = None  # totals=1: each map line's last total

    # helpers ---------------------------------------------------------------
    def _err(self, message: str, line: str) -> ParseError:
        return ParseError(self.source, self.line_no, message, line)

    def _entity(self, token: str) -> Entity:
        ent = self.resolve(self.entity_kind, token) if self.resolve else None
        return ent if ent is not None else default_entity(self.entity_kind, token)

    def _number(self, text: str, line: str, what: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise self._err(f"{what} is not a number", line) from None
        if value != value or value in (float("inf"), float("-inf")) or value < 0:
            raise self._err(f"{what} out of range", line)
        return value

    # the protocol ------------------------------------------------------------
    def feed(self, line: str, ts: float) -> List[Record]:
        self.line_no += 1
        text = line.strip()
        if not text or text.startswith("#") or _NOISE.match(text):
            return []
        word = text.split(None, 1)[0]
        if word == HEADER:
            return self._header(text)
        if not self.script:
            raise self._err(f"output before the `{HEADER}` header (not a zfsmon trace script?)", line)
        if word == "interval":
            return self._interval(text, ts)
        if word == "end":
            return self._end(text, ts)
        if word == "slow":
            return [self._slow(text, ts)]
        if word == "error":
            return [Event(ts, EventKind.ERROR, f"{self.script}: {text[5:].strip()}", source=self.source)]
        if text.startswith("@"):
            self._map_line(text)
            return []
        raise self._err("unknown line", line)

    def _header(self, text: str) -> List[Record]:
        parts = text.split()
        if len(parts) < 3 or not parts[1].isdigit():
            raise self._err("header needs a version and a script name", text)
        if int(parts[1]) != VERSION:
            raise self._err(f"protocol version {parts[1]} not supported (this zfsmon reads {VERSION})", text)
        opts: Dict[str, str] = {}
        for kv in parts[3:]:
            key, sep, value = kv.partition("=")
            if not sep or not key:
                raise self._err(f"header option {kv!r} is not key=value", text)
            opts[key] = value
        kind = opts.get("entity", "name")
        if kind not in ENTITY_KINDS:
            raise self._err(f"unknown entity kind {kind!r}", text)
        if opts.get("totals", "0") not in ("0", "1"):
            raise self._err("header option totals must be 0 or 1", text)
        self.script, self.options, self.entity_kind = parts[2], opts, kind
        self.block = None
        self.totals = {} if opts.get("totals") == "1" else None
        return []

    def _interval(self, text: str, ts: float) -> List[Record]:
        parts = text.split()
        if len(parts) != 3:
            raise self._err("`interval` needs EPOCH SECONDS", text)
        when = self._number(parts[1], text, "interval time")
        seconds = self._number(parts[2], text, "interval length")
        unfinished = self.block is not None
        self.block = TraceInterval(self.script, when if when > 0 else ts, seconds)
        if unfinished:
            raise self._err("previous interval has no `end` (output truncated?); dropped", text)
        return []

    def _map_line(self, text: str) -> None:
        m = _MAP_LINE.match(text)
        if not m:
            raise self._err("malformed map line", text)
        name, keys_text, value_text = m.group(1), m.group(2), m.group(3)
        if name not in MAPS:
            raise self._err(f"unknown map @{name}", text)
        if self.block is None:
            raise self._err(f"@{name} outside an interval block", text)
        keys = [k.strip() for k in keys_text.split(", ")] if keys_text is not None else []
        if len(keys) != MAPS[name] or any(not k or " " in k for k in keys):
            raise self._err(f"@{name} needs {MAPS[name]} keys", text)
        value = int(value_text)
        if value < 0:
            raise self._err("negative value", text)
        if self.entity_kind == "devt" and not keys[0].isdigit():
            raise self._err("entity=devt but the key is not a device number", text)
        if self.totals is not None and name in TOTAL_MAPS:
            value = self._since_last(name, keys_text or "", value, text)
            if value == 0:
                return
        b = self.block
        if name == "lat":
            lo = int(keys[2]) if keys[2].isdigit() else -1
            if not is_bucket(lo):
                raise self._err(f"{keys[2]} is not a histogram bucket bound", text)
            b.hist(keys[0], keys[1]).add(lo, value)
        elif name == "max":
            b.hist(keys[0], keys[1]).max = value
        elif name == "sum":
            b.hist(keys[0], keys[1]).sum = value
        elif name == "bytes":
            b.bytes[(keys[0], keys[1])] = b.bytes.get((keys[0], keys[1]), 0) + value
        else:
            b.counts[(keys[0], keys[1])] = b.counts.get((keys[0], keys[1]), 0) + value

    def _since_last(self, name: str, keys_text: str, total: int, line: str) -> int:
        """``totals=1``: this interval's part of a total (all of it after a restart, when the total went down)."""
        assert self.totals is not None
        key = (name, keys_text)
        last = self.totals.get(key)
        if last is None and len(self.totals) >= MAX_TOTALS:
            raise self._err(f"more than {MAX_TOTALS} distinct map lines with totals=1", line)
        self.totals[key] = total
        return total if last is None or total < last else total - last

    def _end(self, text: str, ts: float) -> List[Record]:
        if self.block is None:
            raise self._err("`end` without `interval`", text)
        block, self.block = self.block, None
        self.intervals += 1
        return self.samples(block)

    def _slow(self, text: str, ts: float) -> Event:
        parts = text.split(None, 6)
        if len(parts) < 6:
            raise self._err("`slow` needs EPOCH ENTITY OP NS BYTES [DETAIL]", text)
        when = self._number(parts[1], text, "slow-op time")
        ns = self._number(parts[4], text, "latency")
        nbytes = self._number(parts[5], text, "bytes")
        if self.entity_kind == "devt" and not parts[2].isdigit():
            raise self._err("entity=devt but the key is not a device number", text)
        ent = self._entity(parts[2])
        detail = parts[6] if len(parts) > 6 else ""
        msg = f"slow {parts[3]} {ns / 1e6:.1f} ms on {ent.label()}" + (f" ({detail})" if detail else "")
        return Event(when if when > 0 else ts, EventKind.INFO, msg, source=self.source, entity=ent.key,
                     data={"op": parts[3], "lat_ns": ns, "bytes": nbytes, "detail": detail, "slow": True})

    # interval -> samples -----------------------------------------------------
    def samples(self, block: TraceInterval) -> List[Record]:
        """One sample per entity (and per parent vdev when devices resolve to vdev leaves)."""
        per: Dict[Entity, Dict[str, float]] = {}
        parents: Dict[Entity, Dict[str, Histogram]] = {}
        parent_bytes: Dict[Entity, Dict[str, int]] = {}
        for token in block.entities():
            ent = self._entity(token)
            metrics = per.setdefault(ent, {})
            for (t, op), h in block.hists.items():
                if t != token:
                    continue
                metrics.update(latency_metrics(op, h, block.seconds, block.bytes.get((t, op))))
                if self.rollup and ent.parent and ent.pool and ent.parent != ent.pool:
                    pe = Entity(ent.kind, ent.parent, ent.pool, ent.role, ent.pool)
                    parents.setdefault(pe, {}).setdefault(op, Histogram()).merge(h)
                    if (t, op) in block.bytes:
                        pb = parent_bytes.setdefault(pe, {})
                        pb[op] = pb.get(op, 0) + block.bytes[(t, op)]
            for (t, name), n in block.bytes.items():
                if t == token and (t, name) not in block.hists:
                    metrics[f"{name}_bytes"] = float(n)
            for (t, name), n in block.counts.items():
                if t == token:
                    metrics[name] = metrics.get(name, 0.0) + float(n)
        for pe, ops in parents.items():
            metrics = per.setdefault(pe, {})
            for op, h in ops.items():
                metrics.update(latency_metrics(op, h, block.seconds, parent_bytes.get(pe, {}).get(op)))
        src = f"trace:{block.script}"
        return [Sample(block.ts, ent, m, interval=block.seconds, source=src) for ent, m in per.items() if m]


def parse_text(text: str, source: str = "trace", resolve: Optional[Resolver] = None) -> List[Record]:
    """A whole recorded output at once (tests, ``zfsmon parse``); stops at the first ParseError."""
    parser = TraceParser(source, resolve)
    out: List[Record] = []
    for line in text.splitlines():
        out.extend(parser.feed(line, 0.0))
    return out
