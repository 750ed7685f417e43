"""Block-device metrics: what the operating system's disk layer saw (``/proc/diskstats``, illumos ``iostat -xn``).

These sit next to the ZFS view so a "goose egg" (the disk layer reporting
zeros while ZFS is busy, as on virtual or SAN disks) is visible. Linux gives
cumulative counters; illumos ``iostat`` gives per-interval averages it already
computed (gauges). Times are converted to ns, kilobytes to bytes.

The pool-level ``io`` kstat of ZFS-on-Linux 0.6-0.8 has the same shape as an
illumos disk's I/O kstat (KSTAT_TYPE_IO), so its rows live here too, prefixed
``io_`` so they never collide with ``zpool iostat``'s pool rows.
"""

from __future__ import annotations

from typing import List

from zfsmon.metrics.spec import COUNTER, GAUGE, MetricSpec
from zfsmon.model import Kind

_D = (Kind.DEVICE,)
_DS = "/proc/diskstats"
_IO = "iostat -xn"
_IX = "saved iostat -x (sysstat)"


def _spec(kind: str, name: str, unit: str, help: str, linux: str = "", illumos: str = "") -> MetricSpec:
    src = {k: v for k, v in (("linux", linux), ("illumos", illumos)) if v}
    return MetricSpec(name, unit, kind, help, _D, src)


def _c(*args: str, **kw: str) -> MetricSpec:
    return _spec(COUNTER, *args, **kw)


def _g(*args: str, **kw: str) -> MetricSpec:
    return _spec(GAUGE, *args, **kw)


def _pool_io(name: str, unit: str, kind: str, help: str, field: str) -> MetricSpec:
    return MetricSpec(name, unit, kind, help, (Kind.POOL,), {"linux": f"/proc/spl/kstat/zfs/POOL/io {field} (ZoL <= 0.8)"})


SPECS: List[MetricSpec] = [
    # cumulative counters (Linux /proc/diskstats)
    _c("reads", "ops", "read requests completed by the device", f"{_DS} field 4"),
    _c("reads_merged", "ops", "read requests merged with an adjacent one before reaching the device", f"{_DS} field 5"),
    _c("read_bytes", "B", "bytes read (512-byte sectors x 512)", f"{_DS} field 6"),
    _c("read_time_ns", "ns", "time spent by all read requests (sum over requests)", f"{_DS} field 7 (ms)"),
    _c("writes", "ops", "write requests completed by the device", f"{_DS} field 8"),
    _c("writes_merged", "ops", "write requests merged before reaching the device", f"{_DS} field 9"),
    _c("write_bytes", "B", "bytes written (512-byte sectors x 512)", f"{_DS} field 10"),
    _c("write_time_ns", "ns", "time spent by all write requests (sum over requests)", f"{_DS} field 11 (ms)"),
    _g("in_flight", "count", "requests issued to the device and not yet completed", f"{_DS} field 12"),
    _c("busy_ns", "ns", "time the device had at least one request in flight (its delta / elapsed = utilisation)",
       f"{_DS} field 13 io_ticks (ms)"),
    _c("weighted_ns", "ns", "in-flight requests x time (its delta / elapsed = average queue length)",
       f"{_DS} field 14 time_in_queue (ms)"),
    _c("discards", "ops", "discard (TRIM) requests completed", f"{_DS} field 15 (kernel >= 4.18)"),
    _c("discards_merged", "ops", "discard requests merged", f"{_DS} field 16 (kernel >= 4.18)"),
    _c("discard_bytes", "B", "bytes discarded", f"{_DS} field 17 (kernel >= 4.18)"),
    _c("discard_time_ns", "ns", "time spent by discard requests", f"{_DS} field 18 (kernel >= 4.18, ms)"),
    _c("flushes", "ops", "cache flush requests completed", f"{_DS} field 19 (kernel >= 5.5)"),
    _c("flush_time_ns", "ns", "time spent by flush requests", f"{_DS} field 20 (kernel >= 5.5, ms)"),
    # per-interval averages (illumos iostat -xn): already rates, so gauges
    _g("read_ops", "ops/s", "reads per second over the interval", f"{_IX} r/s", f"{_IO} r/s"),
    _g("write_ops", "ops/s", "writes per second over the interval", f"{_IX} w/s", f"{_IO} w/s"),
    _g("read_bw", "B/s", "bytes read per second over the interval", f"{_IX} rkB/s x 1024", f"{_IO} kr/s x 1024"),
    _g("write_bw", "B/s", "bytes written per second over the interval", f"{_IX} wkB/s x 1024", f"{_IO} kw/s x 1024"),
    _g("wait_queue", "count", "average requests waiting in the host's queue (not yet sent to the device)",
       illumos=f"{_IO} wait"),
    _g("active_queue", "count", "average requests being serviced by the device", illumos=f"{_IO} actv"),
    _g("wait_svc_ns", "ns", "average time a request spent waiting in the host's queue", illumos=f"{_IO} wsvc_t (ms)"),
    _g("active_svc_ns", "ns", "average time a request spent being serviced", illumos=f"{_IO} asvc_t (ms)"),
    _g("wait_pct", "%", "percent of time requests were waiting", illumos=f"{_IO} %w"),
    _g("busy_pct", "%", "percent of time the device was busy", f"{_IX} %util", f"{_IO} %b"),
    # per-interval averages only sysstat's Linux iostat -x prints (parse/import of saved output)
    *[_g(f"{op}_merges_per_s", "ops/s", f"{op} requests merged per second", f"{_IX} {c}rqm/s")
      for op, c in (("read", "r"), ("write", "w"), ("discard", "d"))],
    *[_g(f"{op}_merged_pct", "%", f"share of {op} requests merged before reaching the device", f"{_IX} %{c}rqm")
      for op, c in (("read", "r"), ("write", "w"), ("discard", "d"))],
    *[_g(f"{op}_await_ns", "ns", f"average time a {op} request took, queue included", f"{_IX} {c}_await (ms)")
      for op, c in (("read", "r"), ("write", "w"), ("discard", "d"), ("flush", "f"))],
    *[_g(f"{op}_req_bytes", "B", f"average size of a {op} request", f"{_IX} {c}areq-sz (kB)")
      for op, c in (("read", "r"), ("write", "w"), ("discard", "d"))],
    _g("discard_ops", "ops/s", "discards per second over the interval", f"{_IX} d/s"),
    _g("discard_bw", "B/s", "bytes discarded per second over the interval", f"{_IX} dkB/s x 1024"),
    _g("flush_ops", "ops/s", "flush requests per second over the interval", f"{_IX} f/s"),
    _g("queue_len", "count", "average number of requests queued or in service", f"{_IX} aqu-sz"),
    _c("soft_errors", "count", "soft errors since boot", illumos="iostat -e s/w"),
    _c("hard_errors", "count", "hard errors since boot", illumos="iostat -e h/w"),
    _c("transport_errors", "count", "transport errors since boot", illumos="iostat -e trn"),
    _c("total_errors", "count", "all errors since boot", illumos="iostat -e tot"),
    # the pool as a disk: ZoL's per-pool KSTAT_TYPE_IO
    _pool_io("io_reads", "ops", COUNTER, "read operations the pool completed", "reads"),
    _pool_io("io_writes", "ops", COUNTER, "write operations the pool completed", "writes"),
    _pool_io("io_read_bytes", "B", COUNTER, "bytes read by the pool", "nread"),
    _pool_io("io_write_bytes", "B", COUNTER, "bytes written by the pool", "nwritten"),
    _pool_io("io_wait_ns", "ns", COUNTER, "time the wait queue was non-empty", "wtime"),
    _pool_io("io_wait_len_ns", "ns", COUNTER, "wait-queue length x time (delta / elapsed = average wait queue)",
             "wlentime"),
    _pool_io("io_run_ns", "ns", COUNTER, "time the run queue was non-empty (busy time)", "rtime"),
    _pool_io("io_run_len_ns", "ns", COUNTER, "run-queue length x time (delta / elapsed = average active queue)",
             "rlentime"),
    _pool_io("io_wait_queue", "count", GAUGE, "requests in the wait queue now", "wcnt"),
    _pool_io("io_run_queue", "count", GAUGE, "requests in the run queue now", "rcnt"),
]
