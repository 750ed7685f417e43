"""Run tracing and show latency distributions per vdev (with roles), not just averages.

NAME is one of zfsmon's traces (see --list): vdevlat (per-vdev I/O latency; on Linux the zfs-fuse
script when a zfs-fuse daemon runs, else the block-layer one), blklat, fusevdevlat, arc, zil,
zfsslower, txg. Each prints the zfsmon trace protocol (docs/tracing.md); zfsmon parses it into
per-interval rates and p50/p95/p99/max percentiles, maps devices to vdevs and roles with
`zpool status`, and prints a table per interval and, at the end, a histogram per device and vdev.

Backends (Linux): bpftrace runs the script of bpftrace/ (one trace per run); bcc runs zfsmon's own
BPF program, with SEVERAL traces in one program: NAME may be a comma-separated list
(zfsslower,arc,vdevlat) or `all` (blklat, zfsslower, arc, zil). bcc compiles its program with clang
at start-up (seconds natively, about a minute under emulation) and then prints "bcc ready: N probes
attached ..." (stdout; stderr with --csv). Default: bpftrace when installed, bcc for several traces.

Tracing needs root and dtrace (illumos, FreeBSD), bpftrace or bcc (Linux; `zfsmon doctor` says which
is usable and why not). Ctrl-C stops the tracer cleanly (SIGINT, then SIGTERM, then SIGKILL to its
process group); no probe stays attached.
--from FILE reads a saved output (`bpftrace blklat.bt 1 > FILE`) instead of tracing.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import List

from zfsmon import host
from zfsmon.commands._readtext import read_text
from zfsmon.commands._timearg import whole
from zfsmon.errors import UserError, printable
from zfsmon.model import Event, EventKind, ParseError, Record, Sample
from zfsmon.trace import catalog
from zfsmon.trace.bcc_collector import BccCollector
from zfsmon.trace.collector import TraceCollector
from zfsmon.trace.protocol import TraceParser
from zfsmon.views.trace_text import Totals, csv_rows, table

NAME = "trace"
HELP = "run DTrace, bpftrace or bcc tracing: per-vdev latency histograms, ARC, ZIL, txg"
EPILOG = """\
examples:
  zfsmon trace vdevlat                  per-vdev latency every second until Ctrl-C
  zfsmon trace vdevlat 5 --count 12     one minute, 5 s intervals, then the histograms
  zfsmon trace blklat 1 --slow 20       block devices, printing each I/O slower than 20 ms
  zfsmon trace vdevlat --csv > lat.csv  percentiles per interval as CSV
  zfsmon trace --backend bcc zfsslower,arc,vdevlat 5   three traces, one bcc program
  zfsmon trace --backend bcc all 5 --slow 50            every bcc trace, ops slower than 50 ms
  zfsmon trace --from saved.out         read a saved script output instead of tracing
  zfsmon trace --list                   the traces and which backend offers them
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME", help="trace (see --list); with --backend bcc a "
                   "comma-separated list or `all`")
    p.add_argument("interval", nargs="?", type=whole(1, 86400), default=1, metavar="INTERVAL",
                   help="seconds per report (whole number, default 1)")
    p.add_argument("--count", type=whole(1), metavar="N", help="stop after N intervals")
    p.add_argument("--slow", type=whole(0, 3_600_000), default=0, metavar="MS",
                   help="also report each op slower than MS ms")
    p.add_argument("--csv", action="store_true", help="CSV rows (one per entity and op per interval)")
    p.add_argument("--pool", action="append", default=[], metavar="POOL", help="roles from this pool only")
    p.add_argument("--no-histograms", action="store_true", help="skip the closing histograms")
    p.add_argument("--from", dest="from_file", metavar="FILE", help="parse a saved script output")
    p.add_argument("--backend", choices=catalog.LINUX_BACKENDS, help="Linux: bpftrace (default when installed) "
                   "or bcc (several traces in one program)")
    p.add_argument("--list", action="store_true", help="list the traces, which backend offers them, and exit")


def _list() -> int:
    fam = catalog.tracer_family()
    linux = fam == "bpftrace"
    for spec in catalog.SCRIPTS.values():
        files = ", ".join(spec.files.values())
        if spec.name in catalog.VARIANTS:  # the script used where this one's probes are missing
            other = catalog.VARIANTS[spec.name]
            files += ", " + ", ".join(other.files.values()) + f" ({other.used_when})"
        if linux:
            where = "bpftrace" if "bpftrace" in spec.files else ""
            where += (", " if where else "") + "bcc" if catalog.bcc_offers(spec.name) else ""
            here = f"  [{where or 'not on this platform'}]"
        else:
            here = "" if fam in spec.files else "  (not on this platform)"
        print(f"{spec.name:<12} {spec.help}\n{'':<12} {files}{here}")
    if linux:
        print(f"{'all':<12} bcc only: every bcc trace ({', '.join(catalog.bcc_program.TRACES)}) in one program")
        for check in (host.probe_bpftrace(), host.probe_bcc()):
            print(f"backend {check.name}: {'usable' if check.ok else 'not usable'}: {check.detail}")
    return 0


class _Printer:
    """Groups samples of one interval (same ts) and prints them as a table or CSV."""

    def __init__(self, use_csv: bool) -> None:
        self.csv = use_csv
        self.pending: List[Sample] = []
        self.totals = Totals()
        self.intervals = 0
        self.header_done = False

    def take(self, records: List[Record]) -> None:
        for r in records:
            if isinstance(r, Sample):
                if self.pending and r.ts != self.pending[0].ts:
                    self.flush()
                self.pending.append(r)
                self.totals.add(r)
            elif isinstance(r, Event):
                self.flush()
                where = sys.stderr if r.kind == EventKind.ERROR or self.csv else sys.stdout
                print(("zfsmon: " if r.kind == EventKind.ERROR else "") + printable(r.text), file=where)

    def flush(self) -> None:
        if not self.pending:
            return
        self.intervals += 1
        if self.csv:
            sys.stdout.write(csv_rows(self.pending, header=not self.header_done))
            self.header_done = True
        else:
            stamp = time.strftime("%H:%M:%S", time.localtime(self.pending[0].ts))
            print(f"{stamp}  ({printable(self.pending[0].source)})")
            print("\n".join(table(self.pending)))
            print()
        sys.stdout.flush()
        self.pending = []


def _from_file(args: argparse.Namespace, out: _Printer) -> None:
    lines = read_text(args.from_file).splitlines()  # bounded; binary input is one line, not a UnicodeDecodeError
    parser = TraceParser(f"trace:{args.from_file}")
    problems: List[str] = []
    samples = 0
    for line in lines:
        try:
            recs = parser.feed(line, time.time())
        except ParseError as exc:
            problems.append(str(exc))
            continue
        samples += sum(isinstance(r, Sample) for r in recs)
        out.take(recs)
    out.flush()
    if not samples:
        raise UserError(f"{args.from_file}: no trace output in it" + (f" ({len(problems)} unreadable lines; first: "
                                                                      f"{problems[0]})" if problems else ""))
    if problems:
        print(printable(f"zfsmon: {len(problems)} unreadable lines left out; first: {problems[0]}"), file=sys.stderr)


def _live(args: argparse.Namespace, out: _Printer) -> None:
    if args.interval < 1:
        raise UserError("INTERVAL must be a whole number of seconds >= 1")
    names = catalog.split_names(args.name)
    backend = catalog.choose_backend(args.backend, names)
    coll: TraceCollector
    if backend == "bcc":
        coll = BccCollector(names, args.interval, slow_ms=args.slow, pools=tuple(args.pool))
    else:
        if len(names) != 1:
            raise UserError(f"{backend} runs one trace per run; several at once: --backend bcc {args.name}")
        coll = TraceCollector(names[0], args.interval, slow_ms=args.slow, pools=tuple(args.pool))
    problem = coll.preflight()
    if problem:
        raise UserError(problem)
    if backend == "bcc":
        print(f"zfsmon: bcc compiles one program for {', '.join(coll.selection)} (seconds natively, minutes "
              f"under emulation); it says when it is ready", file=sys.stderr, flush=True)
    coll.start()
    try:
        seen_data = False
        while True:
            done = args.count is not None and coll.intervals() >= args.count
            if done:
                time.sleep(0.2)  # the reader thread queues an interval's samples just after counting it
            recs = coll.poll()
            seen_data = seen_data or any(isinstance(r, Sample) for r in recs)
            out.take(recs)
            if coll.ended() and not seen_data:
                errors = [r.text for r in recs if isinstance(r, Event) and r.kind == EventKind.ERROR]
                raise UserError(errors[-1] if errors else f"{coll.argv[0]} ended before printing anything")
            if done:
                break
            time.sleep(0.1)
        out.flush()
    finally:
        coll.stop()


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    out = _Printer(args.csv)
    if args.from_file:
        _from_file(args, out)
    elif not args.name:
        raise UserError("which trace? give NAME (see `zfsmon trace --list`)")
    else:
        try:
            _live(args, out)
        except KeyboardInterrupt:
            out.flush()
    if not args.csv and not args.no_histograms:
        lines = out.totals.render()
        if lines:
            print("latency histograms over the whole run:\n" + "\n".join(lines))
    return 0
