"""`zfsmon iostat` at work; its manual and options are :mod:`zfsmon.commands.options.iostat`."""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

from zfsmon.analysis import goose
from zfsmon.analysis.rates import Deriver
from zfsmon.commands._timearg import seconds
from zfsmon.engine.reads import READ_DEADLINE_S, DeadlinePolls, deadline_for
from zfsmon.errors import UserError, printable
from zfsmon.host import identify
from zfsmon.model import Event, EventKind, ParseError, Record, Sample
from zfsmon.sources.base import Collector
from zfsmon.sources.registry import build_collectors
from zfsmon.sources.zpool.iostat_collector import ZpoolIostatCollector, read_once
from zfsmon.sources.zpool.probe import probe_flags
from zfsmon.sources.zpool.status import Topology, read_topology
from zfsmon.views import iostat_text as view


def split_operands(operands: Sequence[str]) -> Tuple[List[str], Optional[float], Optional[int]]:
    """``[POOL...] [INTERVAL [COUNT]]`` as zpool reads it: trailing numbers are the interval and count."""
    ops = list(operands)
    nums: List[str] = []
    while ops and len(nums) < 2 and ops[-1][:1].isdigit():
        nums.insert(0, ops.pop())
    interval: Optional[float] = None
    count: Optional[int] = None
    if nums:
        try:
            interval = seconds(nums[0])
        except argparse.ArgumentTypeError as exc:
            raise UserError(str(exc)) from None
        if not float(interval).is_integer():
            raise UserError(f"INTERVAL must be whole seconds (zpool iostat needs that): {nums[0]!r}")
    if len(nums) == 2:
        if not nums[1].isdigit() or int(nums[1]) <= 0:
            raise UserError(f"COUNT must be a positive whole number: {nums[1]!r}")
        count = int(nums[1])
    for pool in ops:
        if not pool[:1].isalpha():
            raise UserError(f"not a pool name: {pool!r}")
    return ops, interval, count


class DeviceView:
    """Block-device ops/s per leaf, from the host's device source, for the device column and goose eggs.

    The device source is read when a report is printed, so both sides cover
    (nearly) the same interval. With no device source here, no column.
    """

    def __init__(self, collector: Collector, deadline_s: float = READ_DEADLINE_S) -> None:
        self.collector = collector
        #: a device read stuck in the kernel leaves the column at its last values, said once, not the table held
        self.polls = DeadlinePolls([collector], deadline_s)
        self.deriver = Deriver()
        self.ops: Dict[str, float] = {}
        self.leaf: Dict[str, str] = {}  # device -> the zpool leaf it says it is ("" when it does not)

    @classmethod
    def for_host(cls, interval: float) -> Optional[DeviceView]:
        h = identify()
        for name in ("diskstats", "iostat"):
            try:
                made, _ = build_collectors(h, interval, names=[name])
            except UserError:
                continue
            return cls(made[0], deadline_for(interval))
        return None

    def refresh(self) -> None:
        errors: List[str] = []
        records = [r for recs in self.polls.poll(errors) for r in recs]
        for e in errors:
            print(f"zfsmon iostat: {printable(e)}", file=sys.stderr)
        for r in records:
            if not isinstance(r, Sample):
                continue
            if r.interval is not None:  # an interval row (illumos iostat): already per second
                ops = goose.device_ops_per_s(r.metrics)
            else:
                d, _ = self.deriver.update(r)
                ops = d.metrics.get("ops_per_s") if d is not None else None
            if ops is not None:
                self.ops[r.entity.name] = ops
                self.leaf[r.entity.name] = r.entity.parent

    def __call__(self, leaf: str) -> Optional[float]:
        devices = goose.leaf_devices([leaf], self.leaf)[leaf]
        return self.ops[devices[0]] if devices else None


class _Printer:
    """Prints the records of each report as they arrive: a header when a new report starts."""

    def __init__(self, args: argparse.Namespace, device_ops: Optional[view.DeviceOps],
                 devices: Optional[DeviceView] = None) -> None:
        self.args = args
        self.devices = devices
        self.table = view.IostatTable(parsable=args.parsable or args.csv, scripted=args.scripted,
                                      device_ops=device_ops)
        self.csv_cols: Optional[List[str]] = None
        self.last_ts: Optional[float] = None
        self.reports = 0

    def take(self, records: Sequence[Record], out=None, err=None) -> None:
        out = out or sys.stdout
        err = err or sys.stderr
        samples: List[Sample] = []
        for r in records:
            if isinstance(r, Event):
                if r.kind in (EventKind.ERROR, EventKind.TOPOLOGY) and not r.data.get("repeat"):
                    print(f"zfsmon iostat: {printable(r.text)}", file=err, flush=True)
            elif isinstance(r, Sample):
                if self.args.skip_first and r.since_boot:
                    continue
                samples.append(r)
        # a batch may hold the end of one report and the start of the next: print them apart
        i = 0
        while i < len(samples):
            j = i
            while j < len(samples) and samples[j].ts == samples[i].ts:
                j += 1
            self._print(samples[i:j], out)
            i = j

    def _print(self, batch: List[Sample], out) -> None:
        new = batch[0].ts != self.last_ts
        if new and self.devices is not None:
            self.devices.refresh()
        if new:
            self.reports += 1
            self.last_ts = batch[0].ts
        if self.args.csv:
            if self.csv_cols is None:
                self.csv_cols = view.csv_columns(batch)
                print(view.csv_header(self.csv_cols), file=out)
            lines = view.csv_rows(batch, self.csv_cols)
        else:
            lines = self.table.render(batch, with_header=new)
            if new and self.reports > 1 and not self.args.scripted:
                lines.insert(0, "")
        if lines:
            print("\n".join(lines), file=out, flush=True)


def _topology(pools: Sequence[str], zpool: str) -> Optional[Topology]:
    """Roles from ``zpool status``; a pool that does not exist is the user's error, said in one line."""
    try:
        return read_topology(pools, zpool)
    except OSError as exc:
        raise UserError(str(exc).replace("`", "")) from None
    except ParseError:
        return None  # unexpected status text: roles from iostat alone


def run(args: argparse.Namespace, device_ops: Optional[view.DeviceOps] = None) -> int:
    """``device_ops`` (leaf name -> block-device ops/s) is the hook for the device-level view's goose eggs."""
    pools, interval, count = split_operands(args.operands)
    if shutil.which(args.zpool) is None:
        raise UserError(f"{args.zpool}: command not found (is ZFS installed?)")
    if args.skip_first and interval is None:
        raise UserError("-y needs an INTERVAL (without one there is only the since-import report)")
    topo = _topology(pools, args.zpool)
    flags = probe_flags(args.zpool, keys=("", "T", "l", "q", "lq", "p"))
    if flags.problem:
        raise UserError(f"zpool iostat does not work here: {flags.problem}")
    devices = None
    if device_ops is None and interval is not None and not args.no_device and not args.scripted:
        devices = DeviceView.for_host(interval)
        if devices is not None:
            devices.collector.start()
            devices.refresh()  # the baseline reading
    printer = _Printer(args, devices if devices is not None else device_ops, devices)
    if interval is None:
        try:
            printer.take(read_once(pools, flags.argv(), args.zpool, topology=topo))
        except (OSError, ParseError) as exc:
            raise UserError(str(exc)) from None
        return 0
    collector = ZpoolIostatCollector(pools, interval, flags.argv(), args.zpool)
    collector.start()
    try:
        _loop(collector, printer, count)
    finally:
        collector.stop()
        if devices is not None:
            devices.polls.close()
            devices.collector.stop()
    return 0


def _loop(collector: ZpoolIostatCollector, printer: _Printer, count: Optional[int]) -> None:
    """Poll until COUNT reports are printed; then give the last report's remaining pools a moment."""
    done_at: Optional[float] = None
    while True:
        printer.take(collector.poll())
        if count is not None and printer.reports >= count and done_at is None:
            done_at = time.monotonic()
        if done_at is not None and time.monotonic() - done_at > 0.3:
            return
        time.sleep(0.05)
