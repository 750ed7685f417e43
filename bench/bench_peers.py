"""Peers: zfsmon beside the tools users would pick instead, on one pool under one load, each at one interval.

In one run, on the guest's pool under a steady fio load (8k random read/write at a modest rate on the dataset, a
process of its own whose CPU is not counted), each arm of ``ARMS`` runs at the same interval (default 1 s):
zfsmon ``exporter`` (scraped), node_exporter's zfs collector alone and its default collectors (scraped),
``zpool_influxdb`` one-shot (run once an interval) and ``--execd`` (sent a newline an interval), the
``zpool iostat -v`` children (``-v``, the reference; ``-v -l -q``; ``-v -w``; ``-vlq`` and ``-w`` together, as
zfsmon runs them), ``arcstat`` (``zarcstat`` on 2.4), ``zfsmon record`` (into /tmp) and ``zfsmon top`` (on a
pseudo-terminal of 160x50, TERM=xterm-256color, its screen read and thrown away). The scrapes are the bench's own,
one an interval, with urllib on loopback (ports --port and up).

The arms are interleaved: R rounds (--rounds), each giving every arm in turn (the order rotated each round)
S seconds (--seconds) after a discarded warm-up (--warmup), the other arms stopped meanwhile (SIGSTOP to every
process of their trees), so each is measured alone. An arm starts at its first turn. zfsmon's sampler keeps a
fixed schedule and, continued, takes the ticks it missed at once: its warm-up lasts until its tree uses less
than --busy of a core (at most --catch-up seconds). Per arm and round: CPU per interval (user and system time of
the process and its descendants, reaped children included, from /proc through psutil; the one-shot runs' own
rusage), the kernel's share of it (system time), the tree's peak RSS (each process's VmHWM, summed) and PSS, and
what it serves per interval: sample lines of a scrape, fields of line protocol, numbers of a ``zpool iostat`` or
``arcstat`` report, values of a recording's tick, bytes of the screen. Which of per-vdev latency histograms,
roles, health, L2ARC and ZIL figures each serves is read from its output (``features``); a fixed, hand-checked
note says what it serves that the others do not.

    zfsmon guest run --zfs 2.3 --out DIR --timeout 45m -- \\
        'cd /mnt/zfsmon && /opt/zfsmon/venv/bin/python3 bench/bench_peers.py --pool zguest --dataset zguest/db'

Prints a markdown table for docs/performance.md: medians and min-max over the rounds, and each arm's ratio to
``zpool iostat -v POOL INTERVAL`` (the median of the per-round ratios, with their min-max). Writes every round's
raw numbers to OUT/peers.json (--out: default $ZFSMON_OUT, else the working directory). --dry-run prints the
plan (arms, resolved commands, wall time) and runs nothing; --arm NAME runs only the arms named; --from-json
FILE prints the table of an earlier run's peers.json.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import platform
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import termios
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Callable, Deque, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

import psutil
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_collect import pool_mountpoint, tree_procs, tree_times  # noqa: E402
from zfsmon.store import Recording  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: what the features columns say an output serves, in their order
FEATURES = ("histograms", "roles", "health", "l2arc", "zil")

#: the reason pdf/zfs_exporter has a row but no figures
ZFS_EXPORTER_NOT_BUILT = ("not built: the Go module proxy answers 403 \"This module version is not available\" for "
                          "github.com/pdf/zfs_exporter/v2 (the version list and v2.3.4) and for "
                          "github.com/pdf/zfs_exporter, and the guest has no network")


@dataclass(frozen=True)
class Arm:
    """One tool as the bench runs it. ``kind`` says how it is driven: ``child`` (prints a report an interval;
    ``argv`` may hold several children, run together), ``scrape`` (a server; the bench scrapes it an interval),
    ``oneshot`` (run once an interval), ``execd`` (prints a sample for each newline on its standard input),
    ``record`` (writes a recording), ``pty`` (draws a screen). Words of ``argv`` are templates: ``{zfsmon}`` is this
    Python's ``-m zfsmon``, ``{pool}``, ``{interval}``, ``{listen}`` (127.0.0.1:PORT), ``{port}``, ``{recording}``; a word
    ``tool:A|B`` is the first of the programs A, B found on PATH or as a path."""

    name: str
    kind: str
    argv: Tuple[Tuple[str, ...], ...]
    serves: str
    note: str
    #: per_line: each line of values is a report (arcstat); else a report starts with the output's first header
    per_line: bool = False
    #: a scrape is ready once it holds a sample whose name starts with this
    ready_text: str = ""
    #: zfsmon's sampler: continued after a stop, it first takes the ticks it missed
    catches_up: bool = False
    #: why the arm has a row but is not run
    unavailable: str = ""


NODE = "tool:prometheus-node-exporter|node_exporter"
INFLUXDB = "tool:/usr/lib/zfs-linux/zpool_influxdb|zpool_influxdb"
ZPOOL_V = ("zpool", "iostat", "-v", "{pool}", "{interval}")
ZPOOL_VLQ = ("zpool", "iostat", "-v", "-l", "-q", "{pool}", "{interval}")
ZPOOL_VW = ("zpool", "iostat", "-v", "-w", "{pool}", "{interval}")

#: the arms, in the table's order; the first is the reference of the ratios
ARMS: Tuple[Arm, ...] = (
    Arm("zpool iostat -v", "child", (ZPOOL_V,), "numbers a report",
        "ops and bandwidth per vdev, logs and cache as sections; nothing else"),
    Arm("zpool iostat -v -l -q", "child", (ZPOOL_VLQ,), "numbers a report",
        "adds average waits per queue and queue depths per vdev"),
    Arm("zpool iostat -v -w", "child", (ZPOOL_VW,), "numbers a report",
        "latency histograms per vdev and queue, without roles"),
    Arm("zpool iostat -vlq + -w", "child", (ZPOOL_VLQ, ZPOOL_VW), "numbers a report",
        "both children, as zfsmon runs them (zfsmon reads -w every 10 s)"),
    Arm("arcstat", "child", (("tool:arcstat|zarcstat", "{interval}"),), "numbers a line",
        "ARC hits and sizes only (its default fields)", per_line=True),
    Arm("zpool_influxdb (one-shot)", "oneshot", ((INFLUXDB,),), "fields",
        "every vdev's stats, latency and request-size histograms, queues, state; no cache devices, no roles, "
        "no ARC or ZIL"),
    Arm("zpool_influxdb --execd", "execd", ((INFLUXDB, "--execd"),), "fields",
        "the same from one process (Telegraf's execd mode)"),
    Arm("node_exporter, zfs collector", "scrape",
        ((NODE, "--web.listen-address={listen}", "--collector.disable-defaults", "--collector.zfs"),),
        "samples", "ARC, L2ARC, ZIL, dataset and pool kstats, pool state; no per-vdev I/O or latency",
        ready_text="node_zfs_"),
    Arm("node_exporter, default collectors", "scrape", ((NODE, "--web.listen-address={listen}"),), "samples",
        "the zfs collector and the whole host's (CPU, memory, disks, network...)", ready_text="node_zfs_"),
    Arm("pdf/zfs_exporter", "scrape", (), "samples",
        "pools' and datasets' properties from the zpool/zfs commands (its README; not measured here)",
        unavailable=ZFS_EXPORTER_NOT_BUILT),
    Arm("zfsmon exporter", "scrape", (("{zfsmon}", "exporter", "--listen", "{listen}", "--interval", "{interval}"),),
        "samples", "every source in one: per-vdev I/O, queues and latency histograms with roles and parents, "
        "health, ARC, L2ARC, ZIL, datasets, txgs, block devices", ready_text="zfsmon_last_sample_timestamp_seconds",
        catches_up=True),
    Arm("zfsmon record", "record", (("{zfsmon}", "record", "--interval", "{interval}", "--quiet", "--out",
                                     "{recording}"),), "values a tick",
        "the exporter's readings kept on disk, for replay, analyze and export", catches_up=True),
    Arm("zfsmon top", "pty", (("{zfsmon}", "top", "--interval", "{interval}", "--no-record"),), "screen bytes",
        "the exporter's readings on a 160x50 screen, with findings", catches_up=True),
)

REFERENCE = ARMS[0].name


# --- what an output serves (pure: tested on real captures) ---------------------------------------------------

#: a number as zpool iostat and arcstat print them: 12, 1.5K, 617us, 100 (a lone "-" is no number)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?[A-Za-z%]{0,2}")
#: the labels or tags that name a vdev
_VDEV_KEYS = frozenset({"vdev", "device", "leaf", "path"})
#: words that say a vdev's role, as labels' values and as zpool iostat's section lines
_ROLE_WORDS = frozenset({"log", "logs", "cache", "special", "dedup", "spare", "spares"})
_ROLE_KEYS = frozenset({"role", "class", "vdev_class", "alloc_class"})


def prom_samples(text: str) -> int:
    """Sample lines of a Prometheus text exposition (what a scrape serves)."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def lp_split(line: str) -> Tuple[str, Dict[str, str], List[str]]:
    """(measurement, tags, field keys) of one line of InfluxDB line protocol: spaces, commas and equals signs
    escaped with a backslash, string field values in double quotes (which may hold any of them)."""
    line = line.rstrip("\n")
    if "\\" not in line and '"' not in line:  # nothing escaped or quoted (zpool_influxdb's lines): split
        parts = line.split(" ")
        head, fields = parts[0].split(","), parts[1].split(",") if len(parts) > 1 else []
        tags = [t.partition("=") for t in head[1:]]
        keys = [f.partition("=") for f in fields]
        if len(parts) < 2 or not all(k and eq for k, eq, _ in tags + keys):
            raise ValueError(f"not line protocol: {line[:80]!r}")
        return head[0], {k: v for k, _, v in tags}, [k for k, _, _ in keys]
    parts = _split_unescaped(line, " ", quotes_from=1)
    if len(parts) < 2 or not parts[1]:
        raise ValueError(f"not line protocol: {line[:80]!r}")
    head = _split_unescaped(parts[0], ",", quotes_from=sys.maxsize)
    return (_unescape(head[0]), dict(_kv(t) for t in head[1:]),
            [_kv(f)[0] for f in _split_unescaped(parts[1], ",")])


def _split_unescaped(text: str, sep: str, quotes_from: int = 0) -> List[str]:
    """``text`` split at each ``sep`` not escaped by a backslash nor inside double quotes (quotes count only from
    the ``quotes_from``-th part on: in a measurement or a tag a quote is a character like any other)."""
    out, cur, escaped, quoted = [], "", False, False
    for ch in text:
        if escaped:
            cur += ch
            escaped = False
        elif ch == "\\":
            cur += ch
            escaped = True
        elif ch == '"' and len(out) >= quotes_from:
            quoted = not quoted
            cur += ch
        elif ch == sep and not quoted:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def _kv(text: str) -> Tuple[str, str]:
    parts = _split_unescaped(text, "=", quotes_from=sys.maxsize)
    if len(parts) < 2 or not parts[0]:
        raise ValueError(f"not key=value: {text[:80]!r}")
    return _unescape(parts[0]), _unescape("=".join(parts[1:]))


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def lp_fields(text: str) -> int:
    """Fields of every line of a line protocol text (what one zpool_influxdb sample serves)."""
    return sum(len(lp_split(line)[2]) for line in text.splitlines() if line.strip() and not line.startswith("#"))


def _is_row(tokens: Sequence[str]) -> bool:
    """A row of values: a name, then numbers or dashes only."""
    return len(tokens) >= 2 and all(t == "-" or _NUMBER.fullmatch(t) for t in tokens[1:])


class ReportCounter:
    """Numbers a text tool (``zpool iostat``, ``arcstat``) prints and the reports they came in, fed line by line.
    A report starts with the output's first header line (each report repeats it), or, ``per_line``, is one row
    (arcstat repeats its header only now and then). The last lines are kept for :func:`text_features`."""

    def __init__(self, per_line: bool = False, keep: int = 2000) -> None:
        self.per_line = per_line
        self.first: Optional[str] = None
        self.values = 0
        self.reports = 0
        self.tail: Deque[str] = deque(maxlen=keep)

    def feed(self, line: str) -> None:
        tokens = line.split()
        if not tokens:
            return
        self.tail.append(line.rstrip("\n"))
        if _is_row(tokens):
            numbers = sum(1 for t in tokens[1:] if t != "-")
            self.values += numbers
            if self.per_line and numbers:
                self.reports += 1
            return
        if self.per_line:
            return
        key = " ".join(tokens)
        if self.first is None and not set(key) <= set("- "):
            self.first = key
        if key == self.first:
            self.reports += 1


def _named(names: Iterable[str]) -> Set[str]:
    """health, l2arc, zil: which of them a set of metric, field or column names holds."""
    words = {w for n in names for w in re.split(r"[^a-z0-9]+", n.lower()) if w}
    out = set()
    if words & {"state", "health"}:
        out.add("health")
    if any(w.startswith("l2") for w in words) or "l2arc" in words:
        out.add("l2arc")
    if any(w.startswith("zil") for w in words):
        out.add("zil")
    return out


def prom_features(text: str) -> FrozenSet[str]:
    """Which of :data:`FEATURES` a scrape serves: latency histograms with a vdev label, a role label (or a label
    valued log, cache...), a state or health metric, L2ARC and ZIL metrics."""
    out: Set[str] = set()
    names = set()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            names.add(s.name)
            if s.name.endswith("_bucket") and "latency" in s.name and _VDEV_KEYS & set(s.labels):
                out.add("histograms")
            if _ROLE_KEYS & set(s.labels) or _ROLE_WORDS & set(s.labels.values()):
                out.add("roles")
    return frozenset(out | _named(names))


def lp_features(text: str) -> FrozenSet[str]:
    """The same for line protocol: a latency measurement with ``le`` buckets for more than one vdev, a role
    tag, a state tag or field, L2ARC and ZIL fields."""
    out: Set[str] = set()
    names: Set[str] = set()
    histogram_vdevs = set()
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        measurement, tags, fields = lp_split(line)
        names.update([measurement, *tags, *fields])
        if "latency" in measurement and "le" in tags:
            histogram_vdevs.update(tags[k] for k in _VDEV_KEYS & set(tags))
        if _ROLE_KEYS & set(tags) or _ROLE_WORDS & set(tags.values()):
            out.add("roles")
    if len(histogram_vdevs) > 1:
        out.add("histograms")
    return frozenset(out | _named(names))


#: a zpool iostat -w table's header: the vdev's name, then the queues
_HISTOGRAM_HEAD = re.compile(r"^(\S+)\s+total_wait\s+disk_wait\b")


def text_features(lines: Iterable[str]) -> FrozenSet[str]:
    """The same for zpool iostat or arcstat text: -w tables for more than one vdev, section lines (logs, cache...),
    and the names in its header lines."""
    out: Set[str] = set()
    names: Set[str] = set()
    tables = set()
    for line in lines:
        tokens = line.split()
        if not tokens:
            continue
        m = _HISTOGRAM_HEAD.match(line)
        if m:
            tables.add(m.group(1))
        if tokens[0] in _ROLE_WORDS and all(t == "-" for t in tokens[1:]):
            out.add("roles")
        elif not _is_row(tokens):
            names.update(t for t in tokens if not set(t) <= set("-"))
    if len(tables) > 1:
        out.add("histograms")
    return frozenset(out | _named(names))


# --- the arms' drivers ---------------------------------------------------------------------------------------

def resolve(arm: Arm, ctx: Dict[str, str], which: Callable[[str], Optional[str]] = shutil.which) -> List[List[str]]:
    """``arm.argv`` with its templates filled in; a missing program is a ValueError naming it."""
    out = []
    for argv in arm.argv:
        words: List[str] = []
        for word in argv:
            if word == "{zfsmon}":
                words += [sys.executable, "-m", "zfsmon"]
            elif word.startswith("tool:"):
                found = next((p for p in (which(c) for c in word[5:].split("|")) if p), None)
                if found is None:
                    raise ValueError(f"{' or '.join(word[5:].split('|'))} not found")
                words.append(found)
            else:
                words.append(word.format(**ctx))
        out.append(words)
    return out


def tree_memory(pids: Iterable[int]) -> Tuple[int, int]:
    """(peak RSS, PSS) in KiB of these processes and their descendants: each one's VmHWM summed, and their PSS."""
    hwm = pss = 0
    for pid in pids:
        for p in tree_procs(pid):
            hwm += vm_hwm(p.pid)
            with contextlib.suppress(psutil.Error):  # ended meanwhile
                pss += p.memory_full_info().pss // 1024
    return hwm, pss


def vm_hwm(pid: int) -> int:
    """Peak RSS in KiB of a living process (its VmHWM: since its exec, unlike a child's rusage, which keeps the
    RSS of the process it was forked from); 0 when it is gone or has no memory of its own."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")), 0)
    except (OSError, ValueError, IndexError):
        return 0


def _signal_tree(pid: int, sig: int) -> None:
    """``sig`` to a process and all its descendants (a child may have a session of its own)."""
    for p in tree_procs(pid):
        with contextlib.suppress(psutil.Error):
            p.send_signal(sig)


class Driver:
    """An arm running: started once, continued for its turns and stopped between them."""

    def __init__(self, arm: Arm, argvs: List[List[str]], interval: float, err: str) -> None:
        self.arm, self.argvs, self.interval = arm, argvs, interval
        self.err_path = err
        self.procs: List[subprocess.Popen] = []
        self.ticks = 0
        self.failed = ""
        #: the output at the end of each turn: what it serves is what any of them holds
        self.kept: List[str] = []

    # start, stop and continue
    def start(self) -> None:
        with open(self.err_path, "ab") as err:
            for argv in self.argvs:
                self.procs.append(self._spawn(argv, err))

    def _spawn(self, argv: List[str], err) -> subprocess.Popen:
        return subprocess.Popen(argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)

    def ready(self) -> bool:
        raise NotImplementedError

    def pause(self) -> None:
        for p in self.procs:
            _signal_tree(p.pid, signal.SIGSTOP)

    def resume(self) -> None:
        for p in self.procs:
            _signal_tree(p.pid, signal.SIGCONT)

    def close(self) -> None:
        for p in self.procs:
            _signal_tree(p.pid, signal.SIGCONT)
            with contextlib.suppress(OSError):
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                _signal_tree(p.pid, signal.SIGKILL)
                p.wait()

    def ended(self) -> str:
        """Why the arm cannot go on (a process ended: its last line of standard error), or ""."""
        for p in self.procs:
            if p.poll() is not None:
                return f"ended with status {p.returncode}: {_last_line(self.err_path)}"
        return ""

    # what a turn measures
    def tick(self) -> None:
        """What the bench does once an interval (scrape, newline, run): nothing for a tool with its own timer."""

    def intervals(self) -> float:
        """Intervals served so far: the bench's ticks, or for a tool with its own timer, elapsed intervals."""
        return time.monotonic() / self.interval

    def cpu(self) -> Tuple[float, float]:
        user = system = 0.0
        for p in self.procs:
            u, s = tree_times(p.pid)
            user, system = user + u, system + s
        return user, system

    def memory(self) -> Tuple[int, Optional[int]]:
        return tree_memory(p.pid for p in self.procs)

    def served(self) -> List[Tuple[float, float]]:
        """(values, reports) counters: a turn serves the sum over them of values / reports."""
        return [(0.0, 0.0)]

    def output(self) -> str:
        """The latest output, for :meth:`features`."""
        return ""

    def keep(self) -> None:
        out = self.output()
        if out:
            self.kept.append(out)

    def features(self) -> FrozenSet[str]:
        """Which of :data:`FEATURES` the outputs kept at the ends of the turns hold, together."""
        return frozenset().union(*(self.features_of(out) for out in self.kept))

    def features_of(self, output: str) -> FrozenSet[str]:
        return frozenset()


def _last_line(path: str) -> str:
    try:
        with open(path, "rb") as f:
            lines = [ln for ln in f.read()[-4000:].decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return "(no standard error)"
    return lines[-1][:200] if lines else "(no standard error)"


class ChildDriver(Driver):
    """Children printing a report an interval; the bench reads their output and counts its numbers."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.counters = [ReportCounter(self.arm.per_line) for _ in self.argvs]

    def _spawn(self, argv: List[str], err) -> subprocess.Popen:
        p = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                             start_new_session=True, text=True, errors="replace")
        counter = self.counters[len(self.procs)]
        threading.Thread(target=_pump, args=(p, counter.feed), daemon=True).start()
        return p

    def ready(self) -> bool:
        return all(c.reports >= 2 for c in self.counters)

    def served(self) -> List[Tuple[float, float]]:
        return [(c.values, c.reports) for c in self.counters]

    def output(self) -> str:
        return "\n".join(line for c in self.counters for line in c.tail)

    def features_of(self, output: str) -> FrozenSet[str]:
        return text_features(output.splitlines())


def _pump(p: subprocess.Popen, feed: Callable[[str], None]) -> None:
    assert p.stdout is not None
    for line in p.stdout:
        feed(line)


class ScrapeDriver(Driver):
    """A Prometheus exporter, scraped by the bench once an interval."""

    def __init__(self, arm: Arm, argvs: List[List[str]], interval: float, err: str, url: str) -> None:
        super().__init__(arm, argvs, interval, err)
        self.url = url
        self.samples = 0
        self.last = ""
        self.errors = 0

    def _scrape(self) -> Optional[str]:
        try:
            with urllib.request.urlopen(self.url, timeout=max(10.0, 5 * self.interval)) as r:
                return r.read().decode("utf-8", "replace")
        except (OSError, urllib.error.URLError):
            return None

    def ready(self) -> bool:
        body = self._scrape()
        if body is None or not any(line.startswith(self.arm.ready_text) for line in body.splitlines()):
            return False
        self.last = body
        return True

    def tick(self) -> None:
        body = self._scrape()
        self.ticks += 1
        if body is None:
            self.errors += 1
            return
        self.samples += prom_samples(body)
        self.last = body

    def intervals(self) -> float:
        return float(self.ticks)

    def served(self) -> List[Tuple[float, float]]:
        return [(float(self.samples), float(self.ticks - self.errors))]

    def output(self) -> str:
        return self.last

    def features_of(self, output: str) -> FrozenSet[str]:
        return prom_features(output)


class OneshotDriver(Driver):
    """A program run once an interval: its CPU from its own rusage (wait4), its peak RSS from /proc while it
    prints."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.user = self.system = 0.0
        self.maxrss = 0
        self.fields = 0
        self.last = ""

    def start(self) -> None:
        pass

    def _run(self) -> bool:
        with open(self.err_path, "ab") as err:
            p = subprocess.Popen(self.argvs[0], cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=err)
        assert p.stdout is not None
        chunks = []
        while True:  # its peak RSS is read while it prints, the last time just before it ends
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
            self.maxrss = max(self.maxrss, vm_hwm(p.pid))
        p.stdout.close()
        out = b"".join(chunks).decode("utf-8", "replace")
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        self.user += ru.ru_utime
        self.system += ru.ru_stime
        if p.returncode != 0:
            self.failed = f"exit status {p.returncode}: {_last_line(self.err_path)}"
            return False
        self.fields += lp_fields(out)
        self.last = out
        return True

    def ready(self) -> bool:
        return self._run()

    def tick(self) -> None:
        self.ticks += 1
        self._run()

    def intervals(self) -> float:
        return float(self.ticks)

    def cpu(self) -> Tuple[float, float]:
        return self.user, self.system

    def memory(self) -> Tuple[int, Optional[int]]:
        return self.maxrss, None

    def ended(self) -> str:
        return self.failed

    def served(self) -> List[Tuple[float, float]]:
        return [(float(self.fields), float(self.ticks))]

    def output(self) -> str:
        return self.last

    def features_of(self, output: str) -> FrozenSet[str]:
        return lp_features(output)


class ExecdDriver(Driver):
    """A program that prints a sample for each newline it reads (zpool_influxdb --execd)."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.fields = 0
        self.batch: List[str] = []
        self.last = ""
        self._lock = threading.Lock()

    def _spawn(self, argv: List[str], err) -> subprocess.Popen:
        p = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                             start_new_session=True, text=True, errors="replace")
        threading.Thread(target=_pump, args=(p, self._line), daemon=True).start()
        return p

    def _line(self, line: str) -> None:
        if not line.strip():
            return
        n = len(lp_split(line)[2])
        with self._lock:
            self.fields += n
            self.batch.append(line)

    def _ask(self) -> None:
        stdin = self.procs[0].stdin
        assert stdin is not None
        with self._lock:
            if self.batch:
                self.last = "".join(self.batch)
            self.batch = []
        with contextlib.suppress(OSError):
            stdin.write("\n")
            stdin.flush()

    def ready(self) -> bool:
        if self.fields:
            return True
        if not self.ticks:
            self.ticks = 1
            self._ask()
        return False

    def tick(self) -> None:
        self.ticks += 1
        self._ask()

    def intervals(self) -> float:
        return float(self.ticks)

    def served(self) -> List[Tuple[float, float]]:
        with self._lock:
            return [(float(self.fields), float(self.ticks))]

    def output(self) -> str:
        with self._lock:
            return self.last or "".join(self.batch)

    def features_of(self, output: str) -> FrozenSet[str]:
        return lp_features(output)


class RecordDriver(Driver):
    """``zfsmon record`` into a file; its values per tick are read from the recording at the end."""

    def __init__(self, arm: Arm, argvs: List[List[str]], interval: float, err: str, recording: str) -> None:
        super().__init__(arm, argvs, interval, err)
        self.recording = recording
        self._seen: List[Tuple[Tuple[int, int], ...]] = []

    def ready(self) -> bool:
        """Once the file has changed twice (two commits; they go to its write-ahead log first)."""
        state = []
        for path in (self.recording, self.recording + "-wal"):
            with contextlib.suppress(OSError):
                st = os.stat(path)
                state.append((st.st_size, st.st_mtime_ns))
        key = tuple(state)
        if key and (not self._seen or key != self._seen[-1]):
            self._seen.append(key)
        return len(self._seen) >= 3

    def per_tick(self, start: float, end: float) -> Optional[float]:
        """Values the recording holds per tick of its most sampled entity and source between ``start`` and ``end``
        (wall clock; read once the recorder has ended)."""
        rec = Recording.open(self.recording)
        try:
            per_stream: Counter = Counter()
            values = 0
            for _, stream, vals, _ in rec.rows(start=start, end=end):
                per_stream[stream.source, stream.entity_key] += 1  # a new layout is a new stream of them
                values += len(vals)
            features = _recorded_features(rec)
        finally:
            rec.close()
        self._features = features
        ticks = max(per_stream.values(), default=0)
        return values / ticks if ticks else None

    def features(self) -> FrozenSet[str]:
        return getattr(self, "_features", frozenset())


def _recorded_features(rec: Recording) -> FrozenSet[str]:
    """What a recording holds of :data:`FEATURES`, from its entities (roles) and metric names."""
    out = set()
    names = set()
    for e in rec.entities():
        if e.role is not None and e.role.value in _ROLE_WORDS:
            out.add("roles")
    for st in rec.streams.values():
        names.update(st.names)
        names.add(st.source)
        if not st.entity_key.startswith("pool:") and any(n.startswith("lat_") for n in st.names):
            out.add("histograms")  # a vdev's -w buckets
    return frozenset(out | _named(names))


class PtyDriver(Driver):
    """A full-screen program on a pseudo-terminal of 160x50; the bench reads its screen and counts the bytes."""

    COLUMNS, LINES = 160, 50

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.bytes = 0
        self._grew: List[int] = []

    def _spawn(self, argv: List[str], err) -> subprocess.Popen:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", self.LINES, self.COLUMNS, 0, 0))
        env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(self.COLUMNS), LINES=str(self.LINES))
        # the screen goes to standard error too (Textual draws there): the terminal takes both
        p = subprocess.Popen(argv, cwd=REPO, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                             env=env)
        os.close(slave)
        threading.Thread(target=self._drain, args=(master,), daemon=True).start()
        return p

    def _drain(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the program ended: the terminal is gone
                break
            if not chunk:
                break
            self.bytes += len(chunk)
        os.close(fd)

    def ready(self) -> bool:
        if not self._grew or self.bytes > self._grew[-1]:
            self._grew.append(self.bytes)
        return len(self._grew) >= 4 and self.bytes > 0  # redrawn three times

    def served(self) -> List[Tuple[float, float]]:
        return [(float(self.bytes), time.monotonic() / self.interval)]


# --- a run ---------------------------------------------------------------------------------------------------

@dataclass
class Turn:
    """One arm's measured seconds in one round."""

    round: int
    seconds: float
    intervals: float
    user: float
    system: float
    served: Optional[float]
    rss_kib: int
    pss_kib: Optional[int]
    warmup_s: float
    #: wall-clock times of the measured seconds
    start: float = 0.0
    end: float = 0.0

    @property
    def cpu_ms(self) -> float:
        return 1000.0 * (self.user + self.system) / self.intervals if self.intervals else float("nan")


@dataclass
class ArmResult:
    arm: Arm
    argv: List[List[str]] = field(default_factory=list)
    turns: List[Turn] = field(default_factory=list)
    features: FrozenSet[str] = frozenset()
    served: Optional[float] = None
    not_run: str = ""


def _paced(driver: Driver, seconds: float, until: Optional[Callable[[], bool]] = None) -> None:
    """Tick ``driver`` once an interval on a fixed schedule for ``seconds`` (or until ``until()`` holds)."""
    t0 = time.monotonic()
    n = 0
    while True:
        now = time.monotonic()
        if now - t0 >= seconds or (until is not None and until()):
            return
        driver.tick()
        n += 1
        due = t0 + n * driver.interval
        left = min(due, t0 + seconds) - time.monotonic()
        if left > 0:
            time.sleep(left)
        else:
            n = int((time.monotonic() - t0) / driver.interval)  # behind: the next tick is the next due one


def served_per_interval(before: List[Tuple[float, float]], after: List[Tuple[float, float]]) -> Optional[float]:
    """What a turn served per interval, from a driver's counters at its start and end."""
    total, seen = 0.0, False
    for (v0, r0), (v1, r1) in zip(before, after):
        if r1 - r0 > 0:
            total += (v1 - v0) / (r1 - r0)
            seen = True
    return total if seen else None


def turn(driver: Driver, rnd: int, seconds: float, warmup: float, busy: float, catch_up: float) -> Turn:
    """One measured turn of ``driver``: continued, warmed up (and caught up), measured, stopped again."""
    driver.resume()
    try:
        w0 = time.monotonic()
        _paced(driver, warmup)
        if driver.arm.catches_up:
            last = [sum(driver.cpu()), time.monotonic()]

            def calm() -> bool:
                c, t = sum(driver.cpu()), time.monotonic()
                if t - last[1] < max(1.0, driver.interval):  # CPU times count in clock ticks: a second at least
                    return False
                rate = (c - last[0]) / (t - last[1])
                last[0], last[1] = c, t
                return rate < busy

            _paced(driver, catch_up, until=calm)
        warm = time.monotonic() - w0
        c0, s0, i0, t0, w0 = driver.cpu(), driver.served(), driver.intervals(), time.monotonic(), time.time()
        _paced(driver, seconds)
        c1, s1, i1, t1 = driver.cpu(), driver.served(), driver.intervals(), time.monotonic()
        rss, pss = driver.memory()
        driver.keep()
    finally:
        driver.pause()
    return Turn(rnd, t1 - t0, i1 - i0, c1[0] - c0[0], c1[1] - c0[1], served_per_interval(s0, s1), rss, pss, warm,
                w0, time.time())


def make_driver(arm: Arm, argvs: List[List[str]], interval: float, out: str, port: int, recording: str) -> Driver:
    err = os.path.join(out, "peers-" + re.sub(r"[^a-z0-9]+", "-", arm.name.lower()).strip("-") + ".err")
    if arm.kind == "child":
        return ChildDriver(arm, argvs, interval, err)
    if arm.kind == "scrape":
        return ScrapeDriver(arm, argvs, interval, err, f"http://127.0.0.1:{port}/metrics")
    if arm.kind == "oneshot":
        return OneshotDriver(arm, argvs, interval, err)
    if arm.kind == "execd":
        return ExecdDriver(arm, argvs, interval, err)
    if arm.kind == "record":
        return RecordDriver(arm, argvs, interval, err, recording)
    if arm.kind == "pty":
        return PtyDriver(arm, argvs, interval, err)
    raise ValueError(f"{arm.name}: no such kind {arm.kind!r}")


def plan(arms: Sequence[Arm], args: argparse.Namespace,
         which: Callable[[str], Optional[str]] = shutil.which) -> List[ArmResult]:
    """Each arm with its resolved command, or the reason it is not run; ports from --port up."""
    out = []
    port = args.port
    for arm in arms:
        res = ArmResult(arm)
        if arm.unavailable:
            res.not_run = arm.unavailable
        else:
            ctx = {"pool": args.pool, "interval": f"{args.interval:g}", "listen": f"127.0.0.1:{port}", "port": str(port),
                   "recording": args.recording}
            try:
                res.argv = resolve(arm, ctx, which)
            except ValueError as e:
                res.not_run = str(e)
            if arm.kind == "scrape":
                port += 1
        out.append(res)
    return out


def wall_estimate(n_arms: int, n_catching: int, args: argparse.Namespace) -> float:
    """Seconds the turns take at the least (start-ups and catch-ups beyond --warmup not counted)."""
    return args.rounds * n_arms * (args.warmup + args.seconds) + args.rounds * n_catching * 15.0


def ports_of(results: Sequence[ArmResult], base: int) -> Dict[str, int]:
    """The port each scraped arm listens on, in plan order."""
    ports, port = {}, base
    for r in results:
        if r.arm.kind == "scrape" and not r.arm.unavailable:
            ports[r.arm.name] = port
            port += 1
    return ports


def run(results: List[ArmResult], args: argparse.Namespace, log: Callable[[str], None]) -> None:
    """Every runnable arm in interleaved rounds; fills each result's turns, features and served figure."""
    runnable = [r for r in results if not r.not_run]
    ports = ports_of(results, args.port)
    drivers: Dict[str, Driver] = {}
    try:
        for rnd in range(args.rounds):
            k = rnd % len(runnable) if runnable else 0
            for res in runnable[k:] + runnable[:k]:
                if res.not_run:
                    continue
                d = drivers.get(res.arm.name)
                if d is None:
                    d = drivers[res.arm.name] = make_driver(res.arm, res.argv, args.interval, args.out,
                                                            ports.get(res.arm.name, 0), args.recording)
                    why = start(d, args.start_timeout)
                    if why:
                        res.not_run = why
                        log(f"peers: {res.arm.name}: {why}")
                        d.close()
                        continue
                why = d.ended()
                if why:
                    res.not_run = why
                    log(f"peers: {res.arm.name}: {why}")
                    continue
                t = turn(d, rnd, args.seconds, args.warmup, args.busy, args.catch_up)
                res.turns.append(t)
                log(f"peers: round {rnd + 1}/{args.rounds} {res.arm.name}: {t.cpu_ms:.1f} ms CPU an interval "
                    f"(kernel {t.system:.2f} of {t.user + t.system:.2f} s), served {_fmt(t.served)}, "
                    f"warm-up {t.warmup_s:.0f} s")
        for res in runnable:
            d = drivers.get(res.arm.name)
            if d is not None and not res.not_run:
                res.features = d.features()
                res.served = _median([t.served for t in res.turns if t.served is not None])
    finally:
        for d in drivers.values():
            d.close()
    for res in runnable:
        d = drivers.get(res.arm.name)
        if isinstance(d, RecordDriver) and res.turns:
            try:
                res.served = d.per_tick(res.turns[-1].start, res.turns[-1].end)
                res.features = d.features()
            except Exception as e:  # noqa: BLE001 - a recording that cannot be read loses its column, not the run
                log(f"peers: {res.arm.name}: the recording cannot be read: {e}")


def start(d: Driver, timeout: float) -> str:
    """Start ``d`` and wait until it serves; "" when it does, else why not. It is left stopped."""
    try:
        d.start()
    except OSError as e:
        return f"cannot start: {e}"
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        why = d.ended()
        if why:
            return why
        if d.ready():
            d.pause()
            return ""
        time.sleep(0.5)
    return f"not serving after {timeout:g} s: {_last_line(d.err_path)}"


# --- the table -----------------------------------------------------------------------------------------------

def _median(xs: Sequence[float]) -> Optional[float]:
    return statistics.median(xs) if xs else None


def _fmt(x: Optional[float], digits: int = 0) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def summary(results: Sequence[ArmResult]) -> Dict[str, Dict[str, Optional[float]]]:
    """Per arm: median and min-max of CPU per interval, the kernel's share, memory, and the ratio to the
    reference arm (median and min-max of the per-round ratios)."""
    ref = next((r for r in results if r.arm.name == REFERENCE), None)
    ref_by_round = {t.round: t.cpu_ms for t in ref.turns} if ref else {}
    out: Dict[str, Dict[str, Optional[float]]] = {}
    for r in results:
        if not r.turns:
            continue
        cpu = [t.cpu_ms for t in r.turns]
        total = sum(t.user + t.system for t in r.turns)
        ratios = [t.cpu_ms / ref_by_round[t.round] for t in r.turns if ref_by_round.get(t.round)]
        pss = [t.pss_kib for t in r.turns if t.pss_kib is not None]
        out[r.arm.name] = {
            "cpu_ms": statistics.median(cpu), "cpu_min": min(cpu), "cpu_max": max(cpu),
            "kernel_pct": 100.0 * sum(t.system for t in r.turns) / total if total else None,
            "ratio": _median(ratios), "ratio_min": min(ratios) if ratios else None,
            "ratio_max": max(ratios) if ratios else None,
            "rss_mib": max(t.rss_kib for t in r.turns) / 1024.0,
            "pss_mib": max(pss) / 1024.0 if pss else None,
            "served": r.served,
        }
    return out


def table(results: Sequence[ArmResult], args: argparse.Namespace) -> str:
    """The markdown table of docs/performance.md's Peers section."""
    s = summary(results)
    head = ("| tool | CPU an interval, ms: median [min-max] | kernel | x `zpool iostat -v` [min-max] | peak RSS / PSS, "
            "MiB | served an interval | " + " | ".join(FEATURES) + " | what it serves that the others do not |")
    lines = [head, "|" + "---|" * (7 + len(FEATURES))]
    for r in results:
        if r.arm.name not in s:
            why = r.not_run or "no turn measured"
            lines.append(f"| {r.arm.name} | {why} |" + " |" * (5 + len(FEATURES)) + f" {r.arm.note} |")
            continue
        f = s[r.arm.name]
        ratio = (f"{f['ratio']:.2f} [{f['ratio_min']:.2f}-{f['ratio_max']:.2f}]" if f["ratio"] is not None else "-")
        pss = "-" if f["pss_mib"] is None else f"{f['pss_mib']:.1f}"
        served = f"{_fmt(f['served'])} {r.arm.serves}"
        # a screen is not read back: what top shows is the exporter's readings, not derived here
        feats = " | ".join("n/a" if r.arm.kind == "pty" else "yes" if x in r.features else "-" for x in FEATURES)
        lines.append(f"| {r.arm.name} | {f['cpu_ms']:.1f} [{f['cpu_min']:.1f}-{f['cpu_max']:.1f}] | "
                     f"{_fmt(f['kernel_pct'])} % | {ratio} | {f['rss_mib']:.1f} / {pss} | {served} | {feats} | "
                     f"{r.arm.note} |")
    return "\n".join(lines)


# --- the workload and main -----------------------------------------------------------------------------------

def workload(mountpoint: str, seconds: float, out: str) -> subprocess.Popen:
    """fio: 8k random reads and writes (70/30) at a modest fixed rate, an fsync every 16 writes, on a 32 MiB file."""
    argv = ["fio", "--name=peers", f"--directory={mountpoint}", "--filename=peers-fio.dat", "--size=32m",
            "--rw=randrw", "--rwmixread=70", "--bs=8k", "--ioengine=psync", "--rate_iops=40,20", "--fsync=16",
            "--time_based", f"--runtime={int(seconds)}", "--output-format=json",
            f"--output={os.path.join(out, 'peers-fio.json')}"]
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(out, "peers-fio.err"), "ab"), start_new_session=True)


def _version(argv: List[str]) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return " ".join(r.stdout.split())[:200] if r.returncode == 0 else "?"


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pool", default=os.environ.get("ZFSMON_POOL", "zguest"),
                    help="the pool (default $ZFSMON_POOL or zguest)")
    ap.add_argument("--dataset", default=os.environ.get("ZFSMON_DATASET"),
                    help="where the fio load runs (default $ZFSMON_DATASET, else the pool)")
    ap.add_argument("--interval", type=float, default=1.0, help="every arm's interval, seconds (default 1)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds over the arms (default 3)")
    ap.add_argument("--seconds", type=float, default=15.0, help="measured seconds of each arm a round (default 15)")
    ap.add_argument("--warmup", type=float, default=4.0, help="seconds of each turn before it is measured (default 4)")
    ap.add_argument("--busy", type=float, default=0.8,
                    help="zfsmon's arms: catching up ends when their tree uses less than this of a core (default 0.8)")
    ap.add_argument("--catch-up", type=float, default=120.0,
                    help="zfsmon's arms: at most this many seconds of catching up (default 120)")
    ap.add_argument("--start-timeout", type=float, default=300.0,
                    help="seconds an arm has to serve its first output (default 300)")
    ap.add_argument("--port", type=int, default=19100, help="the first of the scraped arms' ports (default 19100)")
    ap.add_argument("--out", default=os.environ.get("ZFSMON_OUT", "."),
                    help="where peers.json and the arms' standard error go (default $ZFSMON_OUT or .)")
    ap.add_argument("--recording", default="/tmp/bench-peers.zfsmon", help="zfsmon record's file (default %(default)s)")
    ap.add_argument("--arm", action="append", metavar="NAME", help="only this arm (repeatable; names as the table's)")
    ap.add_argument("--no-workload", action="store_true", help="no fio load")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and run nothing")
    ap.add_argument("--from-json", metavar="FILE", help="print the table of an earlier run's peers.json; run nothing")
    a = ap.parse_args(argv)
    if a.interval <= 0 or a.rounds < 1 or a.seconds <= 0 or a.warmup < 0:
        ap.error("--interval and --seconds must be positive, --rounds at least 1, --warmup not negative")
    known = {arm.name for arm in ARMS}
    unknown = sorted(set(a.arm or ()) - known)
    if unknown:
        ap.error(f"no such arm: {', '.join(unknown)} (arms: {'; '.join(sorted(known))})")
    return a


def chosen(args: argparse.Namespace) -> List[Arm]:
    return [arm for arm in ARMS if not args.arm or arm.name in args.arm]


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if args.from_json:
        return from_json(args.from_json)
    results = plan(chosen(args), args)
    runnable = [r for r in results if not r.not_run]
    est = wall_estimate(len(runnable), sum(r.arm.catches_up for r in runnable), args)
    print(f"## Peers\n\nCommand: `python3 bench/bench_peers.py --pool {args.pool} --interval {args.interval:g} "
          f"--rounds {args.rounds} --seconds {args.seconds:g}`; {len(runnable)} arms, at least {est / 60:.0f} min "
          "of turns\n", flush=True)
    for r in results:
        print(f"- {r.arm.name}: " + (f"not run: {r.not_run}" if r.not_run else
                                      " + ".join("`" + " ".join(a) + "`" for a in r.argv)), flush=True)
    if args.dry_run:
        return 0
    os.makedirs(args.out, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            os.unlink(args.recording + suffix)
    machine = {"kernel": platform.release(), "cpus": os.cpu_count(), "zfs": _version(["zfs", "version"]),
               "python": platform.python_version()}
    fio = None
    if not args.no_workload:
        fio = workload(pool_mountpoint(args.dataset or args.pool), est * 2 + 1800, args.out)
    signal.signal(signal.SIGTERM, _terminate)
    t0 = time.monotonic()
    try:
        run(results, args, lambda line: print(line, file=sys.stderr, flush=True))
    finally:
        if fio is not None:
            fio.terminate()
            try:
                fio.wait(timeout=60)
            except subprocess.TimeoutExpired:
                fio.kill()
                fio.wait()
    wall = time.monotonic() - t0
    print(f"\nMachine: {machine['zfs']}; kernel {machine['kernel']}; {machine['cpus']} CPUs; {wall / 60:.1f} min.\n")
    print(table(results, args))
    path = os.path.join(args.out, "peers.json")
    with open(path, "w") as f:
        json.dump(raw_numbers(results, args, machine, wall), f, indent=1, default=str)
    print(f"\nRaw numbers: {path}")
    return 0


def raw_numbers(results: Sequence[ArmResult], args: argparse.Namespace, machine: Dict[str, object],
                wall: float) -> Dict[str, object]:
    """What peers.json holds: the run's options and machine, every arm's turns, and the summary."""
    return {"args": vars(args), "machine": machine, "wall_s": wall, "summary": summary(results),
            "arms": [{"name": r.arm.name, "kind": r.arm.kind, "argv": r.argv, "not_run": r.not_run,
                      "features": sorted(r.features), "served": r.served, "serves": r.arm.serves,
                      "turns": [vars(t) for t in r.turns]} for r in results]}


def results_of(raw: Dict) -> List[ArmResult]:
    """A peers.json's arms again, for its table (--from-json); an arm this file no longer has is left out."""
    arms = {arm.name: arm for arm in ARMS}
    out = []
    for a in raw["arms"]:
        arm = arms.get(a["name"])
        if arm is None:
            print(f"peers: {a['name']}: no such arm here, left out of the table", file=sys.stderr)
            continue
        out.append(ArmResult(arm, a["argv"], [Turn(**t) for t in a["turns"]], frozenset(a["features"]),
                             a["served"], a["not_run"]))
    return out


def from_json(path: str) -> int:
    """Print the table of an earlier run's peers.json."""
    try:
        with open(path) as f:
            raw = json.load(f)
        results = results_of(raw)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"peers: {path}: not a peers.json ({e})", file=sys.stderr)
        return 1
    m = raw.get("machine", {})
    print(f"Machine: {m.get('zfs')}; kernel {m.get('kernel')}; {m.get('cpus')} CPUs; "
          f"{float(raw.get('wall_s', 0)) / 60:.1f} min.\n")
    print(table(results, argparse.Namespace(**raw.get("args", {}))))
    return 0


def _terminate(signum, frame):  # SIGTERM: leave through the finally blocks (every arm and fio ended)
    raise SystemExit(143)


if __name__ == "__main__":
    sys.exit(main())
