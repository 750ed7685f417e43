"""Running ``zpool iostat``: one persistent child per collector, its flags asked of the local ``zpool``, and
the zpool source's record.

The text it prints is read by :mod:`zfsmon.sources.zpool.iostat`; roles come
from ``zpool status`` (:mod:`zfsmon.sources.zpool.status`); which flags this
zpool accepts is probed, never assumed (:mod:`zfsmon.sources.zpool.probe`).
"""

from __future__ import annotations

import shutil
import time
from typing import Callable, List, Optional, Sequence

from zfsmon.host import Check, Host
from zfsmon.model import Kind, ParseError, Record
from zfsmon.sources.base import Collector
from zfsmon.sources.child import StreamCollector
from zfsmon.sources.spec import Source, TextKind
from zfsmon.sources.zpool.iostat import ZpoolIostatParser, looks_like, parse_text, read_capture
from zfsmon.sources.zpool.iostat_columns import RECORD_SOURCE
from zfsmon.sources.zpool.probe import CANDIDATES, probe_flags
from zfsmon.sources.zpool.status import Topology, read_topology, run_zpool

__all__ = ["ZpoolIostatCollector", "iostat_argv", "read_once", "check_host", "topology_or_error", "SOURCE"]


def iostat_argv(pools: Sequence[str], interval: Optional[float], flags: Sequence[str] = (), zpool: str = "zpool",
                count: Optional[int] = None) -> List[str]:
    """``zpool iostat [flags] -v [POOL...] [INTERVAL [COUNT]]``; intervals are whole seconds for old zpools."""
    argv = [zpool, "iostat", *flags, "-v", *pools]
    if interval is not None:
        argv.append(str(int(interval)) if float(interval).is_integer() else str(interval))
        if count is not None:
            argv.append(str(count))
    return argv


def _letters(flags: Sequence[str]) -> str:
    return "".join(f[1:] for f in flags if f.startswith("-") and f not in ("-T",) and not f.startswith("-T"))


def read_once(pools: Sequence[str] = (), flags: Sequence[str] = (), zpool: str = "zpool",
              topology: Optional[Topology] = None, timeout: float = 30.0, clock: Callable[[], float] = time.time
              ) -> List[Record]:
    """One ``zpool iostat -v`` (since-import averages) parsed. Raises OSError if the command fails."""
    argv = iostat_argv(pools, None, flags, zpool)
    text = run_zpool(argv, timeout)
    now = clock()
    return parse_text(text, " ".join(argv), None, start_ts=now, flags=_letters(flags), pools=pools,
                      topology=topology)


class ZpoolIostatCollector(StreamCollector):
    """One persistent ``zpool iostat -T u -v [-l -q -p] [POOL...] INTERVAL`` child, roles merged from ``zpool status``.

    ``flags=None`` probes which flags the local ``zpool`` accepts (at
    :meth:`start`, once) and uses the richest set.  ``zpool status`` is read
    again for a pool whenever its printed rows change, so a removed and
    re-added cache device keeps its role; if it fails, the samples keep the
    roles ``zpool iostat`` itself shows and an error event says why.
    """

    def __init__(self, pools: Sequence[str] = (), interval: float = 5.0, flags: Optional[Sequence[str]] = None,
                 zpool: str = "zpool", clock: Callable[[], float] = time.time,
                 roles_from_status: bool = True) -> None:
        self.pools = list(pools)
        self.interval = float(interval)
        self.zpool = zpool
        self.flags: Optional[List[str]] = list(flags) if flags is not None else None
        self.roles_from_status = roles_from_status
        parser = ZpoolIostatParser(RECORD_SOURCE, self.interval, pools=self.pools)
        super().__init__(iostat_argv(self.pools, self.interval, self.flags or (), zpool), parser, RECORD_SOURCE,
                         clock=clock)
        # one report per interval: silence for several intervals means a hung zpool (replaced, see StreamCollector)
        self.hang_after = max(5 * self.interval, 10.0)

    def start(self) -> None:
        if self.flags is None:
            self.flags = probe_flags(self.zpool, keys=("", "T", "l", "q", "lq", "p")).argv()
        self.argv = iostat_argv(self.pools, self.interval, self.flags, self.zpool)
        super().start()

    def _spawn(self) -> None:
        """Each (re)started child begins with a since-import report, so it gets a fresh parser.

        What the old parser knew about each pool's tree is carried over, so a
        pool that comes back different (re-imported without its cache device)
        still shows up as a topology event.
        """
        old = self.parser
        fresh = ZpoolIostatParser(RECORD_SOURCE, self.interval, flags=_letters(self.flags or ()), pools=self.pools,
                                  topology_provider=self._status if self.roles_from_status else None)
        if isinstance(old, ZpoolIostatParser):
            fresh.inherit(old)
        self.parser = fresh
        super()._spawn()

    def _status(self, pool: str) -> Optional[Topology]:
        return topology_or_error(self, pool, self.zpool)


def topology_or_error(collector: StreamCollector, pool: str, zpool: str = "zpool") -> Optional[Topology]:
    """``zpool status POOL``'s tree for a collector's parser, called from its reader thread: a failure becomes
    the collector's error event (the samples keep the roles they can say), never an exception."""
    try:
        return read_topology([pool], zpool)
    except (OSError, ParseError) as exc:
        collector._q.put(collector._error(f"{collector.name}: roles from zpool status unavailable: {exc}"))
        return None


# --- the source -------------------------------------------------------------------------------------------------

def check_host(host: Host) -> Check:
    """Doctor's line: which ``zpool iostat`` flags the local zpool accepts, asked of zpool itself."""
    if shutil.which("zpool") is None:
        return Check(RECORD_SOURCE, False, "no zpool command")
    flags = probe_flags()
    if flags.problem:
        return Check(RECORD_SOURCE, False, f"zpool does not answer ({flags.problem}); is the ZFS daemon/module up?")
    shown = " ".join(f"-{k}" for k in CANDIDATES if len(k) == 1 and flags.has(k))
    return Check(RECORD_SOURCE, True, "accepts -v" + (f" {shown}" if shown else ""))


def _collector(host: Host, interval: float, pools: Sequence[str]) -> Collector:
    return ZpoolIostatCollector(pools=pools, interval=interval)


SOURCE = Source(
    name=RECORD_SOURCE, help="per-pool/vdev/leaf I/O with roles (zpool iostat -v, roles from zpool status)", order=10,
    check=check_host, collector=_collector,
    kinds=(TextKind("zpool-iostat", "`zpool iostat` output: -v tree, -l/-q columns, -p, -T u|d, -y, "
                    "-r/-w histograms, headerless -H rows (tree from a `zpool status` beside it, or guessed)",
                    looks_like, parse_text, "zpool iostat -v -T u 5 | tee iostat.log", parse_with=read_capture,
                    options=("flags", "beside", "host_text"), interval_rows=True),),
    family="vdev",
    feeds=(Kind.POOL, Kind.VDEV, Kind.LEAF), aliases=("zpool iostat", "zpool_iostat"),
)
