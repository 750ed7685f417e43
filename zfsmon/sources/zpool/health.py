"""Pool and vdev health (``zpool status``): states, error counters, ``slow_ios``, scrub/resilver progress.

Which command, by the detected OpenZFS version (:func:`choose`):

* OpenZFS >= 2.3 (Linux, FreeBSD): ``zpool status -j --json-flat-vdevs
  --json-int [POOL...]``, read by :mod:`zfsmon.sources.zpool.status_json`;
* older OpenZFS (0.8 - 2.2): ``zpool status -p -s [POOL...]`` (exact counts and
  the SLOW column), read by :func:`zfsmon.sources.zpool.status.parse_health`;
* illumos, FreeBSD's legacy ZFS, zfs-fuse: plain ``zpool status [POOL...]``.

If ``-j`` is refused all the same (tools older than the module), the collector
falls back to the text for good and says so in an event. Both parsers give the
same :class:`~zfsmon.sources.zpool.status.PoolHealth`; :func:`to_records`
makes samples (family ``health``) and, compared with the previous reading,
events in plain words ("pool tank: mirror-0 DEGRADED (was ONLINE)", "pool
tank: sdb has 142 checksum errors (was 0)", "scrub finished with 0 errors").

Cost: ``zpool status`` is a command, not a file read: a process, the pool
configuration fetched from the kernel (or the zfs-fuse daemon) and a page of
output: milliseconds of CPU a run, growing with the number of vdevs, so it
runs every few seconds rather than every interval (docs/performance.md,
"Collection", counts the ``zpool status`` runs). It runs in its own
thread, every :data:`EVERY_S` seconds (or the recording's interval if longer),
so a pool whose ``zpool status`` hangs (a suspended pool) delays only this
source.

On Linux OpenZFS the kernel publishes each pool's state in one small file
(``/proc/spl/kstat/zfs/POOL/state``). There, while every pool and vdev is
healthy and no scrub or resilver runs, the command runs only every
:data:`CALM_EVERY_S` seconds, because on OpenZFS 2.3 ``zpool status -j`` at one
run per 10 s costs more CPU than the ``zpool iostat`` child itself. The state
files are read every :data:`EVERY_S` seconds with the list of the machine's
block devices, and a change (a pool DEGRADED, SUSPENDED, imported or exported;
a disk pulled out or put back, the cache device's too, which leaves its pool
ONLINE) runs it at once, then every :data:`EVERY_S` seconds for a calm period
(ZED marks a pulled disk REMOVED seconds after the kernel's list of disks
changes). What a calm pool loses: error counters that grow, and a scrub that
starts, without changing the pool's state show up within a minute, not 10 s (a
running scrub is then followed every 10 s again; ZED faulting a leaf that keeps
failing changes the pool's state).
"""

from __future__ import annotations

import shutil
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from zfsmon.host import Check, Host
from zfsmon.metrics.health import (
    ERROR_WORDS,
    EVENT_ERRORS,
    EVENT_HEALTH,
    EVENT_SCAN,
    HEALTHY_STATES,
    SCAN_FUNCTIONS,
    SCAN_STATES,
    STATE_CODES,
)
from zfsmon.model import Entity, Event, EventKind, Kind, ParseError, Record, Sample
from zfsmon.sources.base import STOP_WAIT_S, Clock, Collector, PeriodicCollector
from zfsmon.sources.devices import diskstats
from zfsmon.sources.kstat import pool as pool_kstat
from zfsmon.sources.spec import Source, TextKind
from zfsmon.sources.zpool.status import PoolHealth, VdevHealth, parse_health, run_zpool
from zfsmon.sources.zpool.status_json import looks_like as looks_like_json
from zfsmon.sources.zpool.status_json import parse_health_json

NAME = "status"
#: seconds between two runs of ``zpool status`` (at least: a longer recording interval wins)
EVERY_S = 10.0
#: seconds between two runs while every pool is healthy and not scanning, where the pools' state files are watched
CALM_EVERY_S = 60.0
JSON_ARGS = ("-j", "--json-flat-vdevs", "--json-int")
#: OpenZFS versions: ``zpool status -j`` (2.3.0), ``-p``/``-s`` (0.8.0)
JSON_SINCE = (2, 3)
EXACT_SINCE = (0, 8)


def choose(host: Host) -> Tuple[List[str], str]:
    """The ``zpool status`` options for this host and why (doctor's words)."""
    v = host.openzfs_version()
    shown = ".".join(str(x) for x in v)
    if v and v[:2] >= JSON_SINCE:
        return list(JSON_ARGS), f"OpenZFS {shown} has JSON output"
    if v and v[:2] >= EXACT_SINCE:
        return ["-p", "-s"], f"text: OpenZFS {shown} has no -j (2.3+)"
    return [], f"text: {host.flavour} {host.zfs_version} has no -j (OpenZFS 2.3+)".replace("  ", " ")


def parse_any(text: str, source: str) -> List[PoolHealth]:
    return parse_health_json(text, source) if looks_like_json(text) else parse_health(text, source)


# --- health -> records ------------------------------------------------------------------------------------------

def _metrics(pool: PoolHealth, index: int) -> Dict[str, float]:
    row = pool.vdevs[index]
    m: Dict[str, float] = dict(row.counts)
    state = pool.state if index == 0 else row.state
    if state in STATE_CODES:
        m["state"] = float(STATE_CODES[state])
        m["online"] = 1.0 if state in HEALTHY_STATES else 0.0
    if index == 0:
        m.pop("slow_ios", None)
        if pool.data_errors is not None:
            m["data_errors"] = pool.data_errors
        scan = pool.scan
        m["scan_function"] = float(SCAN_FUNCTIONS.get(scan.function, 0))
        m["scan_state"] = float(SCAN_STATES.get(scan.state, 0))
        running = scan.state == "SCANNING"
        m["scrubbing"] = 1.0 if running and scan.function == "SCRUB" else 0.0
        m["resilvering"] = 1.0 if running and scan.function == "RESILVER" else 0.0
        m.update(scan.values)
    return m


def samples(pools: Sequence[PoolHealth], ts: float, source: str = NAME) -> List[Sample]:
    """One sample per pool, vdev and leaf (family ``health``)."""
    return [Sample(ts, row.entity, _metrics(p, i), source=source) for p in pools for i, row in enumerate(p.vdevs)]


class HealthTracker:
    """Remembers each entity's state, each leaf's error counts and each pool's scan, and words the changes as
    events."""

    def __init__(self, source: str = NAME) -> None:
        self.source = source
        self._state: Dict[str, str] = {}
        self._errors: Dict[str, Dict[str, int]] = {}
        self._scan: Dict[str, Tuple[str, str, Optional[float]]] = {}

    def to_records(self, pools: Sequence[PoolHealth], ts: float) -> List[Record]:
        out: List[Record] = []
        for p in pools:
            for i, row in enumerate(p.vdevs):
                state = p.state if i == 0 else row.state
                out.extend(self._state_event(p.pool, row.entity, state, ts))
                if row.entity.kind == Kind.LEAF:
                    out.extend(self._errors_event(p.pool, row, ts))
            out.extend(self._scan_event(p, ts))
        out.extend(samples(pools, ts, self.source))
        return out

    def _state_event(self, pool: str, entity: Entity, state: str, ts: float) -> List[Event]:
        was = self._state.get(entity.key)
        self._state[entity.key] = state
        if state == was or (was is None and state in HEALTHY_STATES):
            return []
        what = f"pool {pool}" if entity.kind == Kind.POOL else f"pool {pool}: {entity.name}"
        text = f"{what} {state}" + (f" (was {was})" if was is not None else " when first seen")
        return [Event(ts, EventKind.INFO, text, source=self.source, entity=entity.key,
                      data={EVENT_HEALTH: state, "was": was or ""})]

    def _errors_event(self, pool: str, row: VdevHealth, ts: float) -> List[Event]:
        """A leaf's READ/WRITE/CKSUM counts that grew ("has 206 read errors (was 0)") or were cleared: one event
        per `zpool status` run that saw them change, not one per error."""
        now = {k: int(row.counts[k]) for k in ERROR_WORDS if k in row.counts}
        key = row.entity.key
        was = self._errors.get(key)
        self._errors[key] = now
        if not now or now == (was or {k: 0 for k in now}):
            return []
        what = f"pool {pool}: {row.entity.name}"
        if not any(now.values()):
            text = f"{what} errors cleared (had {_error_words(was or {})})"
        else:
            text = f"{what} has {_error_words(now)} errors" + (f" (was {_error_words(was)})" if was is not None
                                                             else " when first seen")
        return [Event(ts, EventKind.INFO, text, source=self.source, entity=key, data={EVENT_ERRORS: now})]

    def _scan_event(self, p: PoolHealth, ts: float) -> List[Event]:
        now = (p.scan.function, p.scan.state, p.scan.values.get("scan_end_time"))  # a new scan ends later
        was = self._scan.get(p.pool)
        self._scan[p.pool] = now
        if was is None or was == now or p.scan.function == "NONE":
            return []
        what = p.scan.function.lower()
        if p.scan.state == "SCANNING":
            text = f"pool {p.pool}: {what} started"
        elif p.scan.state == "FINISHED":
            errs = p.scan.values.get("scan_errors")
            text = f"pool {p.pool}: {what} finished" + (f" with {errs:.0f} errors" if errs is not None else "")
        else:
            text = f"pool {p.pool}: {what} {p.scan.state.lower()}"
        return [Event(ts, EventKind.INFO, text, source=self.source, entity=f"pool:{p.pool}/{p.pool}",
                      data={EVENT_SCAN: p.scan.function, "scan_state": p.scan.state})]


def _error_words(counts: Dict[str, int]) -> str:
    """``{"read_errors": 206, "checksum_errors": 3}`` -> "206 read, 3 checksum" (all zero: "0")."""
    said = [f"{n} {ERROR_WORDS[k]}" for k, n in counts.items() if n]
    return ", ".join(said) or "0"


# --- the collector -----------------------------------------------------------------------------------------------

class StatusCollector(PeriodicCollector):
    """Runs ``zpool status`` in its own thread every ``every`` seconds; :meth:`poll` hands over what it read."""

    name = NAME
    thread_name = "zfsmon-status"

    def __init__(self, pools: Sequence[str] = (), options: Sequence[str] = (), every: float = EVERY_S,
                 zpool: str = "zpool", clock: Clock = time.time, timeout: float = 60.0,
                 watch: Optional[Callable[[], Optional[object]]] = None, calm_every: float = CALM_EVERY_S) -> None:
        """``watch``: a cheap reading of the pools' states (None: unknown); with it, calm pools are read every
        ``calm_every`` seconds, and at once when the reading changes, then every ``every`` seconds for
        ``calm_every`` seconds after it: a disk pulled out changes the machine's block devices at once, but ZED
        marks its vdev REMOVED only a few seconds later (OpenZFS 2.3 guest: still ONLINE 2 s after)."""
        super().__init__(every, clock)
        #: the monotonic time until which calm pools are read every ``every`` seconds (a watched change was seen)
        self.busy_until = 0.0
        self.pools = list(pools)
        self.options = list(options)
        self.watch = watch
        self.calm_every = max(calm_every, every)
        #: the last reading showed every pool and vdev healthy and no scrub or resilver running
        self.calm = False
        self.zpool = zpool
        self.timeout = timeout
        self.tracker = HealthTracker(self.name)
        self.runs = 0
        self.last_run_s: Optional[float] = None

    @property
    def argv(self) -> List[str]:
        return [self.zpool, "status", *self.options, *self.pools]

    def read_once(self) -> List[Record]:
        """Run the command once and turn its output into records; failures are error events."""
        argv = self.argv
        self.calm = False  # until a reading says otherwise
        t0 = time.monotonic()
        try:
            text = run_zpool(argv, self.timeout)
        except OSError as exc:
            if self.options[:1] == ["-j"] and ("invalid option" in str(exc) or "unrecognized option" in str(exc)):
                self.options = []
                return [Event(self.clock(), EventKind.INFO, f"{self.name}: `zpool status -j` refused; reading the "
                              "text of `zpool status` from now on", source=self.name)]
            return [self._error(f"{self.name}: {exc}")]
        finally:
            self.last_run_s = time.monotonic() - t0
            self.runs += 1
        ts = self.clock()
        try:
            pools = parse_any(text, " ".join(argv))
            records = self.tracker.to_records(pools, ts)
        except ParseError as exc:
            return [self._error(f"{self.name}: {exc}")]
        self.calm = all(_calm(p) for p in pools)
        self._ok()
        return records

    def _wait(self) -> None:
        """Until the next run: ``every`` seconds, or while the pools are calm and their state files say the same,
        up to ``calm_every``."""
        seen = self._watched()
        since = time.monotonic()
        while not self._stop.wait(self.every):
            now = time.monotonic()
            if not self.calm or seen is None or now - since >= self.calm_every - 1e-3 or now < self.busy_until:
                return
            if self._watched() != seen:
                self.busy_until = now + self.calm_every
                return

    def _watched(self) -> Optional[object]:
        if self.watch is None:
            return None
        try:
            return self.watch()
        except OSError:
            return None


def _calm(pool: PoolHealth) -> bool:
    """Healthy throughout and not scrubbing or resilvering: nothing that changes from one run to the next."""
    return (pool.state in HEALTHY_STATES and pool.scan.state != "SCANNING"
            and all(row.state in HEALTHY_STATES for row in pool.vdevs[1:] if row.state))


# --- the source ----------------------------------------------------------------------------------------------

def check_host(host: Host) -> Check:
    if shutil.which("zpool") is None:
        return Check(NAME, False, "no zpool command")
    if host.flavour == "none":
        return Check(NAME, False, "no ZFS on this host")
    opts, why = choose(host)
    cmd = " ".join(["zpool", "status", *opts])
    calm = (f", every {CALM_EVERY_S:g} s while all is healthy (the pools' {pool_kstat.ROOT}/POOL/state files "
            f"watched)") if _watches(host) else ""
    return Check(NAME, True, f"{cmd} every {EVERY_S:g} s{calm} ({why})")


def _watches(host: Host) -> bool:
    return host.system == "Linux" and bool(pool_kstat.has_file("state"))


def watch_reading(pools: Sequence[str], pool_root: str = pool_kstat.ROOT,
                  sys_block: str = diskstats.SYS_BLOCK) -> Optional[Tuple[object, ...]]:
    """What the calm collector watches: the pools' state files and the machine's block devices (None: no pool
    has a state file). A cache device pulled out leaves its pool ONLINE, and its state file saying so; the
    kernel's list of disks changes at once."""
    states = pool_kstat.pool_states(pools, pool_root)
    return None if states is None else (states, diskstats.block_devices(sys_block))


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    opts, _why = choose(host)
    watch = (lambda: watch_reading(pools)) if _watches(host) else None
    return StatusCollector(pools, opts, every=max(EVERY_S, interval), watch=watch)


def parse_text(text: str, source: str, interval: object = None) -> List[Record]:
    """A saved ``zpool status`` (text or ``-j``): one reading at time 0 (events for unhealthy states)."""
    return HealthTracker(NAME).to_records(parse_any(text, source), 0.0)


def looks_like_state(text: str) -> bool:
    """A saved ``/proc/spl/kstat/zfs/POOL/state`` (ONLINE, DEGRADED, SUSPENDED...), once or a line per reading."""
    words = text[:400].split()
    return bool(words) and all(w in STATE_CODES for w in words)


def parse_state(text: str, source: str, interval: Optional[float] = None) -> List[Record]:
    """A saved ``POOL/state`` kstat: one reading per line of the pool named after the file (``POOL.state``), the
    ``state`` and ``online`` zpool status gives a pool, with an event where the state changes; reading *i* at
    ``i * interval`` (a loop of readings without times needs ``--interval``)."""
    pool = pool_kstat.pool_of_file(source)
    entity = Entity(Kind.POOL, pool, pool)
    tracker = HealthTracker(NAME)
    out: List[Record] = []
    lines = [(no, ln.strip()) for no, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    for i, (no, word) in enumerate(lines):
        if word not in STATE_CODES:
            raise ParseError(source, no, f"not a pool state (one of {', '.join(STATE_CODES)})", word)
        ts = i * (interval or 0.0)
        out.extend(tracker._state_event(pool, entity, word, ts))
        out.append(Sample(ts, entity, {"state": float(STATE_CODES[word]),
                                       "online": 1.0 if word in HEALTHY_STATES else 0.0}, source=NAME))
    if not out:
        raise ParseError(source, None, "no pool state in it")
    return out


def looks_like_text(text: str) -> bool:
    head = text[:4000]
    return "pool:" in head and "config:" in head and "NAME" in head and "STATE" in head


SOURCE = Source(
    name=NAME, help="pool/vdev health, error counters, slow I/Os, scrub/resilver progress (zpool status; -j on "
    "OpenZFS 2.3+)", order=12, check=check_host, collector=_collector, family="health",
    kinds=(TextKind("zpool-status-json", "`zpool status -j [--json-flat-vdevs] [--json-int]` (OpenZFS 2.3+)",
                    looks_like_json, parse_text, "zpool status -j --json-flat-vdevs --json-int > status.json"),
           TextKind("zpool-status", "`zpool status [-p] [-s] [POOL]` text", looks_like_text, parse_text,
                    "zpool status -p -s > status.txt"),
           TextKind("pool-state-kstat", "`/proc/spl/kstat/zfs/POOL/state` (Linux; one or a line per reading; pool "
                    "named after the file: POOL.state)", looks_like_state, parse_state,
                    "cat /proc/spl/kstat/zfs/tank/state > tank.state")),
    feeds=(Kind.POOL, Kind.VDEV, Kind.LEAF),
)

__all__ = ["SOURCE", "STOP_WAIT_S", "StatusCollector", "HealthTracker", "choose", "parse_any", "samples"]
