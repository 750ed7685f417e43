"""fio's JSON output as workload samples: ``--output-format=json`` / ``json+``, one document or a stream.

Pure: text in, records out. fio prints one JSON document per run, and with
``--status-interval=N`` one more every N seconds (all concatenated in the
output file). Every document is **cumulative since the job started** (its
``total_ios``, ``io_bytes``, ``runtime`` and latency statistics grow), so
the values of an interval are the differences between two consecutive
documents of the same job:

* IOPS and bandwidth: the change of ``total_ios``/``io_bytes`` over the change
  of the direction's ``runtime`` (fio's own milliseconds); a document whose
  runtime did not move is no interval, and what it counted goes into the
  next one (so a job's intervals add up to fio's totals);
* mean latencies: the change of ``mean * N`` over the change of ``N``;
* completion-latency percentiles (p50, p90, p99, p99.9) and max per interval
  need the histogram of ``json+`` (``clat_ns.bins``): the difference of two
  documents' bins is the interval's histogram, read the way fio reads its own
  (the value of the first bin where the running count reaches p% of N, so the
  last document's percentiles from its bins are fio's printed ones). With
  plain ``json`` only the first document of a job (or a single-document run)
  has percentiles, fio's printed ones; later intervals have none (their
  printed percentiles cover the whole run so far, not the interval).

fio's **final report** (the document it prints after the jobs ended, with
the whole run's IOPS, bandwidth and printed percentiles, the numbers users
quote) is also kept as it is, as the run's result: one sample per job and
direction on ``Entity(WORKLOAD, "fio-run:<job>:<direction>")``
(:func:`zfsmon.names.fio_run_entity`). fio marks neither kind of document
(both come from the same code), so the final report is the last document of
an output that ended: a saved file that is not truncated, fio's stdout when
it exits, and, within one stream, the last document before one that starts
the jobs over (a second run appended to the same file).

Samples belong to ``Entity(WORKLOAD, "fio:<job>:<direction>")``
(:func:`zfsmon.names.fio_entity`), one per job, direction (read, write,
trim) and document, at the document's ``timestamp_ms`` (epoch: the same axis
as ZFS). Jobs of one name (``numjobs`` without ``group_reporting``) are told
apart by their position: ``<job>.0``, ``<job>.1``, ... A job that reports an
error becomes an ERROR event; a truncated last document (fio killed, or a
file still being written) an ERROR event after the complete ones; text that
holds no complete document is a :class:`ParseError`.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from zfsmon.model import Entity, Event, EventKind, Kind, ParseError, Record, Sample
from zfsmon.names import FIO, fio_entity, fio_run_entity
from zfsmon.sources.child import StreamParser

DIRECTIONS = ("read", "write", "trim")
#: (metric suffix, fio percentile) of the completion-latency percentiles kept
PERCENTILES: Tuple[Tuple[str, float], ...] = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9))
_DECODER = json.JSONDecoder()


def looks_like(text: str) -> bool:
    """fio's JSON: a document that starts with ``"fio version"`` (its first key in every version with JSON)."""
    head = text.lstrip()[:200]
    return head.startswith("{") and '"fio version"' in head


def split_documents(text: str, source: str = FIO) -> Tuple[List[dict], Optional[str]]:
    """The complete JSON documents of ``text`` in order, and what is wrong with the rest (None: nothing).

    fio may print a line of its own before a document (``fio: ...`` warnings
    on stdout); such lines are skipped. A document that does not close is the
    rest's problem: it is the last thing in a file fio was killed writing.
    """
    docs: List[dict] = []
    i, n = 0, len(text)
    while i < n:
        start = text.find("{", i)
        if start < 0:
            break
        try:
            doc, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            return docs, (f"{source}: fio JSON document {len(docs) + 1} is truncated or malformed at byte "
                          f"{exc.pos} ({exc.msg}); {len(docs)} complete document(s) read")
        if isinstance(doc, dict) and "jobs" in doc:
            docs.append(doc)
        i = end
    return docs, None


# --- histogram (json+ bins) -------------------------------------------------------------------------------------


def _bins(stat: Mapping) -> Optional[Dict[int, int]]:
    raw = stat.get("bins")
    if not isinstance(raw, Mapping):
        return None
    return {int(k): int(v) for k, v in raw.items()}


def bin_percentile(bins: Mapping[int, int], pct: float) -> Optional[float]:
    """fio's percentile of a histogram (value -> count): the first value where the running count reaches pct% of N."""
    total = sum(bins.values())
    if total <= 0:
        return None
    want = pct / 100.0 * total
    running = 0
    for value in sorted(bins):
        running += bins[value]
        if running >= want:
            return float(value)
    return float(max(bins))


def _diff_bins(now: Mapping[int, int], before: Optional[Mapping[int, int]]) -> Dict[int, int]:
    if not before:
        return {k: v for k, v in now.items() if v > 0}
    out = {k: v - before.get(k, 0) for k, v in now.items()}
    return {k: v for k, v in out.items() if v > 0}


# --- per job and direction --------------------------------------------------------------------------------------


@dataclass
class _Seen:
    """A job direction's cumulative state at the last document (to difference the next one against)."""

    ios: int = 0
    bytes: int = 0
    runtime_ms: int = 0
    clat_n: int = 0
    clat_sum: float = 0.0
    lat_n: int = 0
    lat_sum: float = 0.0
    clat_max: float = 0.0
    bins: Optional[Dict[int, int]] = None
    docs: int = 0


def _num(value: object) -> Optional[float]:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _option(job: Mapping, glob: Mapping, name: str) -> Optional[float]:
    opts = job.get("job options") or {}
    raw = opts.get(name, glob.get(name))
    return _num(raw) if raw is not None else None


def _ms(ns: Optional[float]) -> Optional[float]:
    return None if ns is None else ns / 1e6


def _doc_ts(doc: Mapping, source: str, fallback_ts: Optional[float]) -> float:
    ts = _num(doc.get("timestamp_ms"))
    ts = ts / 1000.0 if ts is not None else _num(doc.get("timestamp"))
    if ts is None:
        if fallback_ts is None:
            raise ParseError(source, None, "fio JSON document without timestamp_ms/timestamp")
        ts = fallback_ts
    return ts


def _printed_ms(clat: Mapping, pct: float) -> Optional[float]:
    """fio's printed percentile ``pct`` of a latency block (ns), in ms."""
    printed = clat.get("percentile")
    return _ms(_num(printed.get(f"{pct:.6f}"))) if isinstance(printed, Mapping) else None


def run_results(doc: Mapping, source: str = FIO, fallback_ts: Optional[float] = None) -> List[Sample]:
    """fio's final report as the run's result: per job and direction with I/O, fio's own whole-run figures.

    IOPS, bandwidth, I/Os, bytes and runtime are fio's fields as printed; the
    latencies its means, max and printed percentiles (ns) in ms; ``error``
    the job's error code. Jobs of one name (numjobs without group_reporting)
    keep their position (``<job>.0``, ``<job>.1``), as their intervals do.
    """
    ts = _doc_ts(doc, source, fallback_ts)
    glob = doc.get("global options") or {}
    out: List[Sample] = []
    for name, job in _named_jobs(doc.get("jobs") or []):
        for direction in DIRECTIONS:
            d = job.get(direction)
            if not isinstance(d, Mapping) or not int(d.get("total_ios") or 0) > 0:
                continue
            clat_ns, lat_ns = d.get("clat_ns"), d.get("lat_ns")
            clat = clat_ns if isinstance(clat_ns, Mapping) else {}
            lat = lat_ns if isinstance(lat_ns, Mapping) else {}
            runtime = _num(d.get("runtime"))
            m: Dict[str, Optional[float]] = {
                "iops": _num(d.get("iops")), "bw_bytes": _num(d.get("bw_bytes")), "ios": _num(d.get("total_ios")),
                "io_bytes": _num(d.get("io_bytes")), "runtime_s": None if runtime is None else runtime / 1000.0,
                "clat_mean_ms": _ms(_num(clat.get("mean"))) if clat.get("N") else None,
                "lat_mean_ms": _ms(_num(lat.get("mean"))) if lat.get("N") else None,
                "clat_max_ms": _ms(_num(clat.get("max"))) if clat.get("N") else None,
                "error": _num(job.get("error") or 0),
            }
            for suffix, pct in PERCENTILES:
                m[f"clat_{suffix}_ms"] = _printed_ms(clat, pct)
            for opt in ("iodepth", "numjobs"):
                v = _option(job, glob, opt)
                m[opt] = v if v is not None else 1.0
            out.append(Sample(ts, Entity(Kind.WORKLOAD, fio_run_entity(name, direction)),
                              {k: v for k, v in m.items() if v is not None},
                              interval=m["runtime_s"] or None, source=source))
    return out


def _restarts(before: Mapping, now: Mapping) -> bool:
    """Whether ``now`` starts the jobs over: other jobs, or a job direction whose I/Os or runtime went back."""
    a, b = dict(_named_jobs(before.get("jobs") or [])), dict(_named_jobs(now.get("jobs") or []))
    if set(a) != set(b):
        return True
    for name, job in b.items():
        for direction in DIRECTIONS:
            x, y = a[name].get(direction), job.get(direction)
            if isinstance(x, Mapping) and isinstance(y, Mapping):
                if (int(y.get("total_ios") or 0) < int(x.get("total_ios") or 0)
                        or int(y.get("runtime") or 0) < int(x.get("runtime") or 0)):
                    return True
    return False


@dataclass
class FioStream:
    """Documents in, samples out, remembering each job direction's last cumulative values (so it can be fed live)
    and the last document (a run's final report once the output ends or the jobs start over)."""

    source: str = FIO
    _seen: Dict[Tuple[str, str], _Seen] = field(default_factory=dict)
    _last: Optional[Tuple[Mapping, float]] = None

    def final(self) -> List[Record]:
        """The output ended: its last document is fio's final report, the run's result (once)."""
        last, self._last = self._last, None
        return list(run_results(last[0], self.source, last[1])) if last is not None else []

    def forget(self) -> None:
        """The output ended without its final report (fio killed while writing): no result."""
        self._last = None

    def document(self, doc: Mapping, fallback_ts: Optional[float] = None) -> List[Record]:
        ts = _doc_ts(doc, self.source, fallback_ts)
        glob = doc.get("global options") or {}
        out: List[Record] = []
        if self._last is not None and _restarts(self._last[0], doc):
            out.extend(self.final())
        self._last = (doc, ts)
        for name, job in _named_jobs(doc.get("jobs") or []):
            err = job.get("error") or 0
            if err:
                out.append(Event(ts, EventKind.ERROR, f"fio job {name}: error {err}", self.source,
                                 Entity(Kind.WORKLOAD, fio_entity(name, "read")).key, {"error": err}))
            for direction in DIRECTIONS:
                s = self._sample(ts, name, direction, job, glob)
                if s is not None:
                    out.append(s)
        return out

    def _sample(self, ts: float, name: str, direction: str, job: Mapping, glob: Mapping) -> Optional[Sample]:
        d = job.get(direction)
        if not isinstance(d, Mapping):
            return None
        ios = int(d.get("total_ios") or 0)
        if ios <= 0:
            return None
        key = (name, direction)
        prev = self._seen.get(key) or _Seen()
        clat = d.get("clat_ns") or {}
        lat = d.get("lat_ns") or {}
        now = _Seen(ios=ios, bytes=int(d.get("io_bytes") or 0), runtime_ms=int(d.get("runtime") or 0),
                    clat_n=int(clat.get("N") or 0), clat_sum=(_num(clat.get("mean")) or 0.0) * int(clat.get("N") or 0),
                    lat_n=int(lat.get("N") or 0), lat_sum=(_num(lat.get("mean")) or 0.0) * int(lat.get("N") or 0),
                    clat_max=_num(clat.get("max")) or 0.0, bins=_bins(clat), docs=prev.docs + 1)
        if ios < prev.ios or now.runtime_ms < prev.runtime_ms:  # a new run of a job of the same name
            prev = _Seen()
            now.docs = 1
        d_ms = now.runtime_ms - prev.runtime_ms
        d_ios = ios - prev.ios
        if d_ms <= 0:
            # no time to divide by (fio can count I/Os before their runtime): the baseline stays where it was, so
            # these I/Os, bytes and latencies belong to the next interval
            self._seen[key] = prev
            return None
        self._seen[key] = now
        m: Dict[str, float] = {
            "iops": d_ios * 1000.0 / d_ms,
            "bw_bytes": (now.bytes - prev.bytes) * 1000.0 / d_ms,
            "ios": float(d_ios),
        }
        if now.clat_n > prev.clat_n:
            m["clat_mean_ms"] = (now.clat_sum - prev.clat_sum) / (now.clat_n - prev.clat_n) / 1e6
        if now.lat_n > prev.lat_n:
            m["lat_mean_ms"] = (now.lat_sum - prev.lat_sum) / (now.lat_n - prev.lat_n) / 1e6
        if now.bins is not None:
            hist = _diff_bins(now.bins, prev.bins)
            for suffix, pct in PERCENTILES:
                v = bin_percentile(hist, pct)
                if v is not None:
                    m[f"clat_{suffix}_ms"] = v / 1e6
            if hist:
                # the exact max when it rose in this interval, else the top bin that filled in it
                m["clat_max_ms"] = (now.clat_max if now.clat_max > prev.clat_max else float(max(hist))) / 1e6
        elif prev.docs == 0:
            printed = clat.get("percentile") or {}
            for suffix, pct in PERCENTILES:
                v = _num(printed.get(f"{pct:.6f}"))
                if v is not None:
                    m[f"clat_{suffix}_ms"] = v / 1e6
            if now.clat_n:
                m["clat_max_ms"] = now.clat_max / 1e6
        for opt in ("iodepth", "numjobs"):
            v = _option(job, glob, opt)
            m[opt] = v if v is not None else 1.0
        m = {k: v for k, v in m.items() if v is not None and math.isfinite(v)}
        return Sample(ts, Entity(Kind.WORKLOAD, fio_entity(name, direction)), m, interval=d_ms / 1000.0,
                      source=self.source)


def _named_jobs(jobs: Sequence[Mapping]) -> Iterator[Tuple[str, Mapping]]:
    """Each job under a name of its own: jobs sharing a name (``numjobs`` without ``group_reporting``) become
    ``name.0``, ``name.1``, ... in their order, skipping any suffix another job already carries as its name
    (``a``, ``a``, ``a.0`` give ``a.1``, ``a.2``, ``a.0``), so no job's figures overwrite another's."""
    names = [str(j.get("jobname", "job")) for j in jobs]
    count = Counter(names)
    taken = set(names)
    seen: Dict[str, int] = {}
    for name, job in zip(names, jobs):
        if count[name] > 1:
            k = seen.get(name, 0)
            while f"{name}.{k}" in taken:
                k += 1
            seen[name] = k + 1
            taken.add(f"{name}.{k}")
            yield f"{name}.{k}", job
        else:
            yield name, job


def parse_json(text: str, source: str = FIO, interval: Optional[float] = None) -> List[Record]:
    """Every document of a saved fio JSON output (one run, or a ``--status-interval`` stream)."""
    docs, problem = split_documents(text, source)
    if not docs:
        raise ParseError(source, None, problem or "no fio JSON document (with \"jobs\") in the text")
    stream = FioStream(source=FIO)
    out: List[Record] = []
    for doc in docs:
        out.extend(stream.document(doc))
    if problem:
        stream.forget()
        last = max((r.ts for r in out), default=0.0)
        out.append(Event(last, EventKind.ERROR, problem, FIO))
    out.extend(stream.final())
    return out


class FioJsonStreamParser(StreamParser):
    """fio's JSON output fed a line at a time (a followed ``--output`` file, or fio's stdout).

    fio ends every document with a ``}`` alone on a line; the lines up to it
    are decoded as one document. A document that does not decode is one
    ERROR event and the parser waits for the next; ``fio: ...`` lines outside
    documents (fio's own errors, when stdout and stderr are one stream) are
    ERROR events; other stray lines are ignored. ``flush`` reports a document
    left open (fio killed mid-write) as an ERROR event.
    """

    def __init__(self, source: str = FIO) -> None:
        self.source = source
        self.stream = FioStream(source=source)
        self._lines: List[str] = []
        self.documents = 0

    def feed(self, line: str, ts: float) -> List[Record]:
        if not self._lines:
            if line.startswith("{"):
                self._lines.append(line)
                return self._maybe_close(line, ts)
            if line.startswith("fio:"):
                return [Event(ts, EventKind.ERROR, line.strip()[:300], self.source)]
            return []
        self._lines.append(line)
        return self._maybe_close(line, ts)

    def _maybe_close(self, line: str, ts: float) -> List[Record]:
        if line.rstrip() != "}" and not (len(self._lines) == 1 and line.rstrip().endswith("}")):
            return []
        text, self._lines = "\n".join(self._lines), []
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            return [Event(ts, EventKind.ERROR, f"{self.source}: a fio JSON document does not decode ({exc.msg} at "
                                               f"line {exc.lineno}); skipped", self.source)]
        if not isinstance(doc, dict) or "jobs" not in doc:
            return []
        self.documents += 1
        return self.stream.document(doc, fallback_ts=ts)

    def flush(self, ts: float) -> List[Record]:
        """End of fio's output: its last document is the final report, unless the output ends inside one."""
        if not self._lines:
            return self.stream.final()
        self.stream.forget()
        n, self._lines = len(self._lines), []
        return [Event(ts, EventKind.ERROR, f"{self.source}: the last fio JSON document is truncated ({n} lines, "
                                           "no closing brace); fio was stopped or killed while writing it",
                      self.source)]
