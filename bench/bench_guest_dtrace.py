"""The D scripts under a real D runtime on kernel OpenZFS, in the QEMU guest: one command, one boot.

    sudo python3 bench/bench_guest_dtrace.py --with-dtrace /opt/dtrace --out DIR      (one boot, about 17 minutes)

zfsmon ships no DTrace: PREFIX is one you installed (Oracle's DTrace for Linux, built for the guest's kernel
release, e.g. 6.1 for Debian 12's; docs/tracing.md, "D on kernel OpenZFS"). ``zfsmon guest run --with-dtrace``
carries it into the guest and loads the zfs module again with its BTF; bench/guest_dtrace.sh runs each D script
alone under fio with ZFS's own counters read at both ends, then ``zfsmon record --backend dtrace`` with every
trace over pgbench, then ``zfsmon trace txg --backend dtrace``. Then the comparison
(:func:`compare`): each script's totals against the ground truth of the same window, printed and written to
DIR/summary.json. ``--analyze-only`` prints it again from DIR without booting. tests/unit/trace/
test_dtrace_openzfs23.py checks a committed run (tests/data/openzfs-2.3/dtrace) on every commit.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.bench_guest_warmup import snapshot  # noqa: E402
from bench.dtrace_truth import compare  # noqa: E402
from zfsmon.lab.guest import boot, build  # noqa: E402
from zfsmon.lab.guest.spec import GuestSpec  # noqa: E402

GUEST_SCRIPT = "bash /mnt/zfsmon/bench/guest_dtrace.sh"
TRACES = ("txg", "zil", "zfsslower", "vdevlat", "arc")


def print_summary(summary: dict) -> None:
    print(" ".join(summary.get("versions", [])))
    for row in summary["rows"]:
        mark = "ok " if row["ok"] else "OFF"
        print(f"{mark} {row['trace']:10s} {row['what']:40s} traced {row['traced']:>10} truth {row['truth']:>10}  "
              f"(tolerance {row['tolerance']})")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zfs", default="2.3", choices=("2.3", "2.4"), help="OpenZFS in the guest (default 2.3: "
                    "Debian 12, whose kernel a DTrace built on Debian 12 has translators for)")
    ap.add_argument("--with-dtrace", metavar="PREFIX", type=Path, help="the installed DTrace (required to boot)")
    ap.add_argument("--out", required=True, type=Path, help="a new directory for everything the run keeps")
    ap.add_argument("--traces", default=",".join(TRACES), help=f"which, in this order (default {','.join(TRACES)})")
    ap.add_argument("--record", help="the traces of `zfsmon record --backend dtrace` over pgbench (default: --traces; "
                    "'' for none)")
    ap.add_argument("--work", type=int, default=40, help="seconds of fio beside each script (default 40)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds the boot may take (default 3600)")
    ap.add_argument("--analyze-only", action="store_true", help="no boot: the comparison of the run in --out")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if not args.analyze_only:
        record = args.traces if args.record is None else args.record
        bad = sorted((set(filter(None, args.traces.split(","))) | set(filter(None, record.split(",")))) - set(TRACES))
        if bad:
            ap.error(f"unknown traces: {', '.join(bad)}")
        if args.with_dtrace is None:
            ap.error("--with-dtrace PREFIX: the DTrace to run (zfsmon ships none)")
        if out.exists() and any(out.iterdir()):
            ap.error(f"{out} is not empty: give a new directory")
        out.mkdir(parents=True, exist_ok=True)
        img = build.cached(GuestSpec(zfs=args.zfs)) or build.build(GuestSpec(zfs=args.zfs))
        src = snapshot(out)
        try:
            res = boot.run(img, f"DTRACE_WORK={args.work} DTRACE_RECORD={shlex.quote(record)} {GUEST_SCRIPT} "
                           f"{shlex.quote(args.traces)}", out / "guest", src=src,
                           timeout=args.timeout, dtrace_prefix=args.with_dtrace)
        finally:
            shutil.rmtree(src, ignore_errors=True)
        if res.exit_code != 0:
            raise SystemExit(f"the guest's command exited {res.exit_code}; see {out / 'guest'}")
    summary = compare(out / "guest" / "dtrace")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print_summary(summary)
    return 0 if all(r["ok"] for r in summary["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
