"""zfsmon-bcc: zfsmon's Linux tracing with bcc, several traces in ONE BPF program, zfsmon's trace protocol out.

USAGE     python3 -m zfsmon.trace.bcc_tool TRACES INTERVAL [SLOW_MS] [--count N] [--program]
            TRACES    comma-separated: blklat (alias vdevlat), zfsslower, arc, zil, or all
            INTERVAL  seconds per report (integer >= 1)
            SLOW_MS   also print every operation slower than this (0 = off)
            --program print the generated C program and exit (no bcc, no root needed)
          zfsmon trace --backend bcc zfsslower,arc,vdevlat 5    (maps devices to vdevs and roles)

It prints, on stdout, exactly what the bpftrace scripts of the same names print (docs/tracing.md), block
after block, each after its own trace's header. bcc compiles the C program with clang at start-up (a few
seconds on a real machine, about a minute under the OpenZFS guest's emulation: docs/tracing.md), so every probe of the
run is in one program. When the probes are attached it prints, on stdout, the protocol comment
``# zfsmon-bcc ready: ...`` (the parser ignores comments) and the same line on stderr: wait for it.
stdout is flushed after every interval and slow line. SIGINT or SIGTERM detach and exit 0.

Needs root, Debian's python3-bpfcc (bcc), the running kernel's headers (linux-headers-$(uname -r)),
kprobes for zfsslower and zil, and the OpenZFS kernel module for zfsslower, arc and zil.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

from zfsmon import host
from zfsmon.errors import UserError
from zfsmon.trace import bcc_program, catalog
from zfsmon.trace.bcc_format import MAP_NAMES, Printer, SlowEvent, Snapshot

TRACEFS_DIRS = host.TRACEFS_DIRS
INSTALL_HINT = "apt install python3-bpfcc"
PREFIX = "zfsmon-bcc"


def read_formats(tracepoints: Sequence[str], roots: Sequence[str] = TRACEFS_DIRS) -> Dict[str, Dict[str, Tuple[int, int]]]:
    """``cat:event`` -> its fields' (offset, size), from the first tracefs that has the format file."""
    out: Dict[str, Dict[str, Tuple[int, int]]] = {}
    for tp in tracepoints:
        cat, event = tp.split(":", 1)
        for root in roots:
            try:
                with open(os.path.join(root, "events", cat, event, "format")) as f:
                    out[tp] = bcc_program.parse_format(f.read())
                break
            except OSError:
                continue
    return out


def _emit(lines: List[str]) -> None:
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()


def _say(text: str) -> None:
    print(f"{PREFIX}: {text}", file=sys.stderr, flush=True)


def _snapshot(bpf) -> Snapshot:  # pragma: no cover - needs bcc and a kernel
    """Take every shared map's entries out of the kernel (atomically per entry where the kernel can)."""
    snap: Snapshot = {}
    for proto, cname in MAP_NAMES.items():
        table = bpf[cname]
        try:
            items = list(table.items_lookup_and_delete_batch())
        except Exception:  # older kernel or bcc: read, then clear (a few events of the gap may be lost)
            items = list(table.items())
            table.clear()
        rows: List[Tuple[Tuple[int, ...], int]] = []
        for k, v in items:
            key = (k.trace, k.op, k.ent, k.lo) if proto == "lat" else (k.trace, k.op, k.ent)
            rows.append((key, int(getattr(v, "value", v))))
        snap[proto] = rows
    return snap


class _Stop(Exception):
    pass


def _on_term(_sig, _frame) -> None:
    raise _Stop()


def run(selection: Sequence[str], interval: int, slow_ms: int, count: Optional[int]) -> int:  # pragma: no cover
    """Compile, attach, print the protocol until stopped (needs bcc, root and the kernel's support)."""
    formats = read_formats(bcc_program.tracepoints(selection))
    missing = bcc_program.unavailable(selection, formats, host.kprobes_available(), os.path.isdir("/sys/module/zfs"))
    if "arc" in selection and "arc" not in missing:
        # the same kernel constants as arc.bt (or, without zfs tracepoints, arc_kprobe.bt): the same version gate
        kprobe = bcc_program.variant("arc", formats) is bcc_program.ARC_KPROBE
        spec = catalog.VARIANTS["arc"] if kprobe else catalog.SCRIPTS["arc"]
        catalog.check_openzfs(spec, "bpftrace", catalog.openzfs_module_version())
        untraceable = host.untraceable([p.event for p in bcc_program.ARC_KPROBE.probes]) if kprobe else []
        if untraceable:
            missing["arc"] = (f"the OpenZFS module has no zfs tracepoints, and {', '.join(untraceable)} is not "
                              f"traceable in this build (inlined)")
        elif kprobe:
            _say("arc: the OpenZFS module has no zfs tracepoints; tracing it with kprobes on arc_read instead")
    selection = tuple(n for n in selection if n not in missing)
    for name, why in missing.items():
        _say(f"{name}: {why}; tracing the others")
    if not selection:
        raise UserError("; ".join(f"{n}: {why}" for n, why in missing.items()))
    text = bcc_program.generate(selection, formats, slow_ms)
    try:
        from bcc import BPF
    except ImportError:
        raise UserError(f"the python3 module bcc is not importable ({INSTALL_HINT})") from None
    probes = bcc_program.probes(selection, formats)
    _say(f"compiling one BPF program for {','.join(selection)} ({len(probes)} probes); under emulation this "
         f"takes minutes")
    t0 = time.monotonic()
    try:
        bpf = BPF(text=text)
    except Exception as exc:  # bcc raises plain Exception("Failed to compile BPF module ..."), clang's errors above it
        raise UserError(f"bcc could not compile the program ({exc}; clang's messages above; "
                        f"`python3 -m zfsmon.trace.bcc_tool {','.join(selection)} --program` prints it)") from None
    compiled = time.monotonic() - t0
    for p in probes:
        try:
            if p.kind == "kprobe":
                bpf.attach_kprobe(event=p.event, fn_name=p.fn)
            elif p.kind == "kretprobe":
                bpf.attach_kretprobe(event=p.event, fn_name=p.fn, maxactive=p.maxactive)
            else:
                bpf.attach_tracepoint(tp=p.event, fn_name=p.fn)
        except Exception as exc:  # bcc raises plain Exception("Failed to attach BPF program ...")
            raise UserError(f"cannot attach {p.label()} ({exc})") from None
    printer = Printer(selection, interval, slow_ms)
    skipped: List[str] = []
    for name, why in missing.items():
        skipped += printer.error_lines(name, why)
    mono0, wall0 = time.monotonic_ns(), time.time()

    def on_slow(_cpu, data, _size) -> None:
        e = bpf["slow"].event(data)
        ev = SlowEvent(e.ts, e.trace, e.op, e.ent, e.lat, e.bytes, e.extra, e.pid,
                       e.comm.decode("utf-8", "replace"), e.file.decode("utf-8", "replace"))
        _emit(printer.slow_lines(ev, wall0 + (ev.ts_ns - mono0) / 1e9))

    bpf["slow"].open_perf_buffer(on_slow, page_cnt=64)
    ready = (f"ready: {len(probes)} probes attached for {','.join(selection)} "
             f"(compiled in {compiled:.1f} s)" + (f"; not traced: {','.join(missing)}" if missing else ""))
    _emit(skipped + printer.headers() + [f"# {PREFIX} {ready}"])
    _say(ready)
    signal.signal(signal.SIGTERM, _on_term)
    done = 0
    next_tick = time.monotonic() + interval
    try:
        while count is None or done < count:
            wait = next_tick - time.monotonic()
            if wait > 0:
                bpf.perf_buffer_poll(timeout=max(1, int(wait * 1000)))
                continue
            next_tick += interval
            _emit(printer.interval_lines(_snapshot(bpf), time.time()))
            done += 1
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        bpf.cleanup()
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m zfsmon.trace.bcc_tool", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", help="comma-separated: " + ", ".join([*bcc_program.TRACES, *bcc_program.ALIASES]))
    ap.add_argument("interval", type=int, nargs="?", default=1)
    ap.add_argument("slow_ms", type=int, nargs="?", default=0)
    ap.add_argument("--count", type=int, metavar="N", help="stop after N intervals")
    ap.add_argument("--program", action="store_true", help="print the generated C program and exit")
    args = ap.parse_args(argv)
    try:
        if args.interval < 1:
            raise UserError("INTERVAL must be a whole number of seconds >= 1")
        selection = bcc_program.select([args.traces])
        if args.program:
            formats = read_formats(bcc_program.tracepoints(selection))
            print(bcc_program.generate(selection, formats, args.slow_ms))
            return 0
        return run(selection, args.interval, args.slow_ms, args.count)
    except UserError as exc:
        _say(str(exc))
        return 2


if __name__ == "__main__":
    sys.exit(main())
