"""Record a workload next to the ZFS sources: one sampler, one recording, one time axis.

Shared by ``zfsmon soak`` and ``zfsmon attach``: the workload collector (a soak
runner or a log follower) and ``pg_stat_database`` join the host's ZFS
collectors in the same :class:`zfsmon.engine.Sampler`, so every record lands in
the same recording with the same clock. Stops on SIGINT/SIGTERM, after the
duration, or when the workload says it is done.
"""

from __future__ import annotations

import signal
import sys
import threading
from dataclasses import dataclass
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

from zfsmon.model import Record
from zfsmon.sources.base import Collector


def zfs_collectors(interval: float, pool: Optional[str] = None) -> Tuple[List[Collector], List[str]]:
    """The host's ZFS (and device) collectors, chosen as ``zfsmon top``/``record`` choose them, and why others
    were skipped. ``pool`` narrows zpool iostat to the soak's pool."""
    from zfsmon.host import probe
    from zfsmon.sources.registry import build_collectors

    collectors, skipped = build_collectors(probe(), interval, [pool] if pool else None)
    return [c for c in collectors if c.name not in ("pgbench", "pgstat")], skipped


#: sources a soak's findings depend on: say so when one of them cannot run
KEY_SOURCES = ("zpool", "arcstats")


def zfs_collectors_or_warn(interval: float, pool: Optional[str] = None) -> List[Collector]:
    """:func:`zfs_collectors`, telling the user on stderr when a source the findings need cannot run."""
    zfs, skipped = zfs_collectors(interval, pool)
    if not zfs:
        print("zfsmon: warning: no ZFS collector is available here (" + "; ".join(skipped) +
              "); recording the workload only", file=sys.stderr)
    for why in skipped:
        if zfs and why.split(":", 1)[0] in KEY_SOURCES:
            print(f"zfsmon: warning: not recording {why}", file=sys.stderr)
    return zfs


@dataclass
class Outcome:
    intervals: int
    samples: int
    events: int
    failure: Optional[str]


def record(out: str, collectors: Sequence[Collector], interval: float, meta: Mapping[str, object],
           duration: Optional[float] = None, done: Optional[threading.Event] = None,
           progress: Optional[Callable[[int, int], None]] = None) -> Outcome:
    """Sample ``collectors`` into ``out`` until a signal, ``duration`` or ``done`` is set."""
    from zfsmon.engine import Sampler
    from zfsmon.store import Recorder, RecordingError

    rec = Recorder(out, dict(meta))
    stop = threading.Event()
    failure: List[str] = []
    ticks = [0]

    def on_signal(signum, _frame) -> None:
        stop.set()

    old = {}
    if threading.current_thread() is threading.main_thread():
        old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}

    def sink(records: List[Record]) -> None:
        if failure:
            return
        try:
            rec.write(records)
        except RecordingError as exc:
            failure.append(str(exc))
            stop.set()
            return
        ticks[0] += 1
        if progress is not None:
            progress(ticks[0], rec.samples_written)

    sink.__name__ = "recorder"

    def watch() -> None:
        if done is not None:
            while not stop.is_set():
                if done.wait(0.5):
                    stop.set()

    watcher = threading.Thread(target=watch, daemon=True, name="zfsmon-soak-watch")
    watcher.start()
    try:
        Sampler(list(collectors), interval, sinks=[sink]).run(duration=duration, stop_event=stop)
    finally:
        stop.set()
        rec.close()
        for s, h in old.items():
            signal.signal(s, h)
    return Outcome(ticks[0], rec.samples_written, rec.events_written, failure[0] if failure else None)


def tty_progress(out: str) -> Callable[[int, int], None]:
    def show(ticks: int, samples: int) -> None:
        if sys.stderr.isatty():
            print(f"\r{out}: {ticks} intervals, {samples} samples", end="", file=sys.stderr)
    return show
