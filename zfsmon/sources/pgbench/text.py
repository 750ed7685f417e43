"""What pgbench prints (``pgbench ... | tee soak.log``) as workload samples: progress lines and run summaries.

Pure: text in, records out. The text holds ``progress:`` lines (``-P``;
elapsed seconds or ``--progress-timestamp`` epoch; optional ``failed``,
``lag``, ``skipped``, ``retried/retries``) and one summary block per run
(``tps = ...`` worded three ways across versions, ``latency average`` with
``=`` or ``:``). Its log files (``--log``) are read by
:mod:`zfsmon.sources.pgbench.log`.

Progress samples belong to ``Entity(WORKLOAD, PGBENCH)`` (per-interval
values); a run's summary belongs to ``Entity(WORKLOAD, PGBENCH_RUN)`` (values
over the whole run) and brackets the run with RUN_START/RUN_END events, so a
loop of ``pgbench -T 58; sleep 2`` without ``-P`` still yields a TPS series.
Counts (failed, skipped, ...) are always counts within the sample's interval.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Dict, List, Optional

from zfsmon.model import Entity, Event, EventKind, Kind, ParseError, Record, Sample
from zfsmon.names import PGBENCH, PGBENCH_RUN
from zfsmon.sources.child import StreamParser
from zfsmon.sources.spec import EPOCH_MIN

#: the ``source`` of the records (text and log samples alike): the workload's name, as its collectors are named
RECORD_SOURCE = PGBENCH
#: per-interval numbers: progress lines here, log intervals in :mod:`zfsmon.sources.pgbench.log`
PROGRESS_ENTITY = Entity(Kind.WORKLOAD, PGBENCH)
RUN_ENTITY = Entity(Kind.WORKLOAD, PGBENCH_RUN)

_NUM = r"(?:[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|-?nan|NaN|-?inf)"
_PROGRESS = re.compile(
    rf"^progress: (?P<t>{_NUM}) s, (?P<tps>{_NUM}) tps, lat (?P<lat>{_NUM}) ms stddev (?P<sd>{_NUM})"
    rf"(?:, (?P<failed>\d+) failed)?"
    rf"(?:, lag (?P<lag>{_NUM}) ms)?"
    rf"(?:, (?P<skipped>\d+) skipped)?"
    rf"(?:, (?P<retried>\d+) retried, (?P<retries>\d+) retries)?\s*$"
)
# pgbench 9.3 printed no stddev: "progress: 5.0 s, 123.4 tps, lat 8.1 ms"
_PROGRESS_OLD = re.compile(rf"^progress: (?P<t>{_NUM}) s, (?P<tps>{_NUM}) tps, lat (?P<lat>{_NUM}) ms"
                           rf"(?:, lag (?P<lag>{_NUM}) ms)?\s*$")
_TPS = re.compile(rf"^tps = (?P<tps>{_NUM}) \((?P<how>including connections establishing|excluding connections "
                  r"establishing|without initial connection time)\)\s*$")
_LAT_AVG = re.compile(rf"^latency average(?: =|:) (?P<v>{_NUM}) ms\s*$")
_LAT_SD = re.compile(rf"^latency stddev(?: =|:) (?P<v>{_NUM}) ms\s*$")
_CONN = re.compile(rf"^initial connection time = (?P<v>{_NUM}) ms\s*$")
_SCHED_LAG = re.compile(rf"^rate limit schedule lag: avg (?P<avg>{_NUM}) \(max (?P<max>{_NUM})\) ms\s*$")
_COUNT_PCT = re.compile(r"^(?P<key>number of failed transactions|number of transactions retried|"
                        r"number of transactions skipped): (?P<n>\d+) \((?P<pct>[^)]*)\)\s*$")
_PROCESSED = re.compile(r"^number of transactions actually processed: (?P<n>\d+)(?:/(?P<of>\d+))?\s*$")
_BANNER = re.compile(r"^pgbench \((?P<ver>[^)]+?\)?)\)\s*$")
_KV = re.compile(r"^(?P<key>transaction type|scaling factor|query mode|number of clients|number of threads|"
                 r"maximum number of tries|duration|number of transactions per client|total number of retries|"
                 r"number of transactions above the .* latency limit): (?P<val>.*)$")

_SUMMARY_INT_KEYS = {
    "scaling factor": "scale", "number of clients": "clients", "number of threads": "threads",
    "maximum number of tries": "max_tries", "number of transactions per client": "transactions_per_client",
    "total number of retries": "retries",
}


def _num(text: str) -> float:
    v = float(text)
    return v if math.isfinite(v) else float("nan")


# ---------------------------------------------------------------------------------------------------------------
# progress lines


@dataclass(frozen=True)
class Progress:
    """One ``progress:`` line. ``t`` is elapsed seconds, or an epoch with ``--progress-timestamp``."""

    t: float
    tps: float
    latency_avg_ms: float
    latency_stddev_ms: Optional[float]
    failed: Optional[int] = None
    lag_ms: Optional[float] = None
    skipped: Optional[int] = None
    retried: Optional[int] = None
    retries: Optional[int] = None

    @property
    def is_timestamp(self) -> bool:
        return self.t >= EPOCH_MIN

    def metrics(self) -> Dict[str, float]:
        m: Dict[str, float] = {"tps": self.tps, "latency_avg_ms": self.latency_avg_ms}
        for name in ("latency_stddev_ms", "failed", "lag_ms", "skipped", "retried", "retries"):
            v = getattr(self, name)
            if v is not None:
                m[name] = float(v)
        return {k: v for k, v in m.items() if not math.isnan(v)}


def parse_progress(line: str, source: str = RECORD_SOURCE, line_no: Optional[int] = None) -> Optional[Progress]:
    """A ``progress:`` line, or None for any other line. A mangled progress line is a ParseError."""
    if not line.startswith("progress:"):
        return None
    m = _PROGRESS.match(line) or _PROGRESS_OLD.match(line)
    if m is None:
        raise ParseError(source, line_no, "unrecognised pgbench progress line", line)
    g = m.groupdict()
    try:
        return Progress(
            t=_num(g["t"]), tps=_num(g["tps"]), latency_avg_ms=_num(g["lat"]),
            latency_stddev_ms=_num(g["sd"]) if g.get("sd") else None,
            failed=int(g["failed"]) if g.get("failed") else None,
            lag_ms=_num(g["lag"]) if g.get("lag") else None,
            skipped=int(g["skipped"]) if g.get("skipped") else None,
            retried=int(g["retried"]) if g.get("retried") else None,
            retries=int(g["retries"]) if g.get("retries") else None,
        )
    except (ValueError, OverflowError) as exc:
        raise ParseError(source, line_no, f"bad number in progress line ({exc})", line) from exc


# ---------------------------------------------------------------------------------------------------------------
# per-run summaries


@dataclass
class Summary:
    """A run's closing report. ``tps`` prefers the figure without connection time, as pgbench 14+ reports it."""

    version: Optional[str] = None
    transaction_type: Optional[str] = None
    query_mode: Optional[str] = None
    scale: Optional[int] = None
    clients: Optional[int] = None
    threads: Optional[int] = None
    max_tries: Optional[int] = None
    duration_s: Optional[float] = None
    transactions_per_client: Optional[int] = None
    processed: Optional[int] = None
    processed_of: Optional[int] = None
    failed: Optional[int] = None
    retried: Optional[int] = None
    retries: Optional[int] = None
    skipped: Optional[int] = None
    latency_avg_ms: Optional[float] = None
    latency_stddev_ms: Optional[float] = None
    lag_avg_ms: Optional[float] = None
    lag_max_ms: Optional[float] = None
    initial_connection_ms: Optional[float] = None
    tps_including: Optional[float] = None  # pgbench <= 13 "including connections establishing"
    tps_excluding: Optional[float] = None  # <= 13 "excluding ..." and 14+ "without initial connection time"
    aborted: bool = False

    @property
    def tps(self) -> Optional[float]:
        return self.tps_excluding if self.tps_excluding is not None else self.tps_including

    @property
    def complete(self) -> bool:
        return self.tps is not None

    def metrics(self, run: int) -> Dict[str, float]:
        m: Dict[str, float] = {"run": float(run)}
        pairs = (("tps", self.tps), ("latency_avg_ms", self.latency_avg_ms),
                 ("latency_stddev_ms", self.latency_stddev_ms), ("transactions", self.processed),
                 ("failed", self.failed), ("skipped", self.skipped), ("retried", self.retried),
                 ("retries", self.retries), ("lag_ms", self.lag_avg_ms), ("clients", self.clients),
                 ("scale", self.scale), ("duration_s", self.duration_s))
        for name, v in pairs:
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                m[name] = float(v)
        return m

    def as_dict(self) -> Dict[str, object]:
        d = {k: v for k, v in self.__dict__.items() if v is not None}
        if self.tps is not None:
            d["tps"] = self.tps
        return d


def _summary_line(s: Summary, line: str, source: str, line_no: Optional[int]) -> bool:
    """Fold one summary line into ``s``; False if the line is not a summary line."""
    try:
        m = _TPS.match(line)
        if m:
            v = _num(m["tps"])
            if m["how"].startswith("including"):
                s.tps_including = v
            else:
                s.tps_excluding = v
            return True
        for rx, attr in ((_LAT_AVG, "latency_avg_ms"), (_LAT_SD, "latency_stddev_ms"),
                         (_CONN, "initial_connection_ms")):
            m = rx.match(line)
            if m:
                setattr(s, attr, _num(m["v"]))
                return True
        m = _SCHED_LAG.match(line)
        if m:
            s.lag_avg_ms, s.lag_max_ms = _num(m["avg"]), _num(m["max"])
            return True
        m = _PROCESSED.match(line)
        if m:
            s.processed = int(m["n"])
            s.processed_of = int(m["of"]) if m["of"] else None
            return True
        m = _COUNT_PCT.match(line)
        if m:
            attr = {"number of failed transactions": "failed", "number of transactions retried": "retried",
                    "number of transactions skipped": "skipped"}[m["key"]]
            setattr(s, attr, int(m["n"]))
            return True
        m = _KV.match(line)
        if m:
            key, val = m["key"], m["val"].strip()
            if key == "transaction type":
                s.transaction_type = val
            elif key == "query mode":
                s.query_mode = val
            elif key == "duration":
                if not val.endswith(" s"):
                    raise ParseError(source, line_no, "duration without unit 's'", line)
                s.duration_s = float(val[:-2])
            elif key in _SUMMARY_INT_KEYS:
                setattr(s, _SUMMARY_INT_KEYS[key], int(val))
            return True
    except ValueError as exc:
        raise ParseError(source, line_no, f"bad number in pgbench summary ({exc})", line) from exc
    if line.startswith("tps = ") or line.startswith("latency average"):
        raise ParseError(source, line_no, "unrecognised pgbench summary line", line)
    return False


def parse_summaries(text: str, source: str = RECORD_SOURCE) -> List[Summary]:
    """Every run summary in a text (pure convenience over :class:`PgbenchTextParser`)."""
    parser = PgbenchTextParser(source=source)
    out: List[Summary] = []
    for i, line in enumerate(text.splitlines()):
        parser.feed(line, float(i))
    parser.flush(float(len(text)))
    out.extend(parser.summaries)
    return out


# ---------------------------------------------------------------------------------------------------------------
# the text stream


class PgbenchTextParser(StreamParser):
    """pgbench's printed output, line by line: progress samples, run summaries, run boundaries, errors.

    Timestamps: ``--progress-timestamp`` lines carry their own; otherwise a run's
    start is anchored when its first line arrives and progress lines are placed
    at start + elapsed. With ``virtual_clock`` (importing a finished file whose
    lines all "arrive" at once) the arrival time is ignored and runs are laid
    end to end from 0, ``pause`` seconds apart; the caller shifts them so the
    last record lands on the file's modification time.
    """

    def __init__(self, source: str = RECORD_SOURCE, entity: Entity = PROGRESS_ENTITY, run_entity: Entity = RUN_ENTITY,
                 virtual_clock: bool = False, pause: float = 0.0) -> None:
        self.source = source
        self.entity = entity
        self.run_entity = run_entity
        self.virtual = virtual_clock
        self.pause = pause
        self.run = 0
        self.summaries: List[Summary] = []
        self._line_no = 0
        self._in_run = False
        self._run_start: Optional[float] = None  # anchor (epoch or virtual)
        self._last_t: Optional[float] = None  # last progress t in this run
        self._last_progress_ts: Optional[float] = None
        self._summary: Optional[Summary] = None
        self._version: Optional[str] = None
        self._vclock = 0.0
        self._after_banner = False
        self._start_emitted = False
        self._start_why = ""
        #: True once the stream carried its own clock (--progress-timestamp): do not shift it
        self.wallclock = False

    # clock ---------------------------------------------------------------------------------------------------
    def _now(self, ts: float) -> float:
        return self._vclock if self.virtual else ts

    # run boundaries ------------------------------------------------------------------------------------------
    def _open_run(self, ts: float, why: str) -> List[Record]:
        """A new run begins at ``ts`` (ignored with a virtual clock: runs are laid end to end)."""
        out: List[Record] = []
        if self._in_run:
            out.extend(self._end_run(self._last_progress_ts if self._last_progress_ts is not None
                                     else self._now(ts), aborted=True))
        if self.virtual:
            ts = self._vclock + (self.pause if self.run else 0.0)
            self._vclock = ts
        self.run += 1
        self._in_run = True
        self._run_start = ts
        self._start_why = why
        self._start_emitted = False
        self._last_t = None
        self._last_progress_ts = None
        if not self.virtual:  # live: say so at once; virtual: wait, a timestamped line may re-anchor the run
            out.extend(self._emit_start())
        return out

    def _emit_start(self) -> List[Record]:
        if self._start_emitted or self._run_start is None:
            return []
        self._start_emitted = True
        return [Event(self._run_start, EventKind.RUN_START, f"pgbench run {self.run} started", source=self.source,
                      entity=self.entity.key, data={"run": self.run, "detected_by": self._start_why})]

    def _end_run(self, ts: float, aborted: bool = False, summary: Optional[Summary] = None) -> List[Record]:
        out = self._emit_start()
        self._in_run = False
        data: Dict[str, object] = {"run": self.run}
        if summary is not None:
            data.update(summary.as_dict())
        text = f"pgbench run {self.run} ended"
        if summary is not None and summary.tps is not None:
            text += f": {summary.tps:.1f} tps"
            if summary.latency_avg_ms is not None:
                text += f", latency {summary.latency_avg_ms:.3f} ms"
        if aborted:
            data["aborted"] = True
            text += " (no summary: killed or aborted)" if summary is None else " (aborted)"
        out.append(Event(ts, EventKind.RUN_END, text, source=self.source, entity=self.entity.key, data=data))
        return out

    # lines ---------------------------------------------------------------------------------------------------
    def feed(self, line: str, ts: float) -> List[Record]:
        self._line_no += 1
        line = line.rstrip("\r\n")
        stripped = line.strip()
        if not stripped:
            return []
        out: List[Record] = []
        if self._summary is not None:
            if _summary_line(self._summary, stripped, self.source, self._line_no):
                if self._summary.tps_excluding is not None:
                    out.extend(self._close_summary(ts))
                return out
            out.extend(self._close_summary(ts))
        now = self._now(ts)
        m = _BANNER.match(stripped)
        if m:
            # The banner goes to stdout, progress to stderr: through a pipe or file stdout is block-buffered, so
            # the banner often arrives at the end of its run, just before the summary. Inside a run it is news
            # about the version, not a new run.
            self._version = m["ver"]
            if not self._in_run:
                out.extend(self._open_run(now, "banner"))
                self._after_banner = True
            return out
        if stripped.startswith("starting vacuum"):
            if not (self._in_run and self._after_banner and self._last_t is None):
                out.extend(self._open_run(now, "vacuum"))
            self._after_banner = False
            return out
        self._after_banner = False
        prog = parse_progress(stripped, self.source, self._line_no)
        if prog is not None:
            out.extend(self._progress(prog, ts))
            return out
        if stripped.startswith("transaction type:"):
            self._summary = Summary(version=self._version)
            _summary_line(self._summary, stripped, self.source, self._line_no)
            return out
        if stripped.startswith("Run was aborted"):
            if self.summaries:
                self.summaries[-1].aborted = True
            out.append(Event(now, EventKind.ERROR, f"pgbench: {stripped}", source=self.source))
            return out
        if stripped.startswith("pgbench: error:") or stripped.startswith("pgbench: fatal:") or (
                stripped.startswith("client ") and " aborted " in stripped):
            out.append(Event(now, EventKind.ERROR, stripped if stripped.startswith("pgbench") else
                             f"pgbench: {stripped}", source=self.source))
            return out
        if stripped.startswith("tps = ") or stripped.startswith("latency average"):
            # a summary line outside a summary block (the block's head was lost, e.g. truncated file)
            self._summary = Summary(version=self._version)
            _summary_line(self._summary, stripped, self.source, self._line_no)
            return out
        return out  # other chatter (init progress, NOTICEs, a wrapper script's echo) is not ours

    def _progress(self, p: Progress, ts: float) -> List[Record]:
        out: List[Record] = []
        if p.is_timestamp:
            self.wallclock = True
            if not self._in_run:
                out.extend(self._open_run(p.t, "progress"))
            if self.virtual and not self._start_emitted:
                self._run_start = p.t  # the stream's own clock beats the virtual one
            at = p.t
            prev = self._last_progress_ts if self._last_progress_ts is not None else self._run_start
            interval = at - prev if prev is not None else None
        else:
            if self._in_run and self._last_t is not None and p.t <= self._last_t:
                out.extend(self._open_run(self._now(ts) - p.t, "elapsed time restarted"))
            elif not self._in_run:
                out.extend(self._open_run(self._now(ts) - p.t, "progress"))
            assert self._run_start is not None
            at = self._run_start + p.t
            interval = p.t - self._last_t if self._last_t is not None else p.t
        out.extend(self._emit_start())
        self._last_t = p.t
        self._last_progress_ts = at
        if self.virtual:
            self._vclock = max(self._vclock, at)
        metrics = p.metrics()
        metrics["run"] = float(self.run)
        out.append(Sample(at, self.entity, metrics, interval=interval if interval and interval > 0 else None,
                          source=self.source))
        return out

    def _close_summary(self, ts: float) -> List[Record]:
        s, self._summary = self._summary, None
        if s is None or not s.complete:
            return []
        out: List[Record] = []
        now = self._now(ts)
        if not self._in_run:
            out.extend(self._open_run(now - (s.duration_s or 0.0), "summary"))
        assert self._run_start is not None
        end = now
        if self.virtual:
            end = max(self._vclock, self._run_start + (s.duration_s or 0.0))
            self._vclock = end
        self.summaries.append(s)
        interval = end - self._run_start if end > self._run_start else None
        out.extend(self._emit_start())
        out.append(Sample(end, self.run_entity, s.metrics(self.run), interval=interval, source=self.source))
        out.extend(self._end_run(end, summary=s))
        return out

    def flush(self, ts: float) -> List[Record]:
        return self._close_summary(ts) if self._summary is not None else []

    def close_run(self, ts: float, why: str) -> List[Record]:
        """The producer is gone (pgbench killed, soak stopped): end an open run without a summary."""
        if not self._in_run:
            return []
        out = self._end_run(self._now(ts), aborted=True)
        end = out[-1]
        assert isinstance(end, Event)
        out[-1] = Event(end.ts, end.kind, f"pgbench run {self.run} ended: {why}", source=end.source,
                        entity=end.entity, data={**end.data, "why": why})
        return out

# ---------------------------------------------------------------------------------------------------------------
# whole texts

_TEXT_LINE = re.compile(r"^(transaction type:|progress: \d+(\.\d+)? s, |tps = |pgbench \(\d)", re.M)


def looks_like(text: str) -> bool:
    """A pgbench banner, progress line or summary line near the start (first 20,000 characters)."""
    return bool(_TEXT_LINE.search(text[:20000]))


def parse_text(text: str, source: str = RECORD_SOURCE, virtual_clock: bool = True, pause: float = 0.0) -> List[Record]:
    """A whole tee'd pgbench text (pure convenience; see :class:`PgbenchTextParser`)."""
    p = PgbenchTextParser(source=source, virtual_clock=virtual_clock, pause=pause)
    out: List[Record] = []
    for i, line in enumerate(text.splitlines()):
        out.extend(p.feed(line, float(i)))
    out.extend(p.flush(float(len(text))))
    return out
