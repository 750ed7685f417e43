"""The fault matrix on kernel OpenZFS, in the QEMU guest: one command, one boot, one recording.

    sudo python3 bench/bench_guest_faults.py --zfs 2.4 --out DIR        (about 35 minutes; root, qemu-system-x86)

The guest (bench/guest_faults.sh) records a two-job fio workload with ``zfsmon soak --fio --interval 2`` on the
lab pool (two mirrors, SLOG, L2ARC; one more disk for a second pool) while it injects read errors, checksum
errors and a slow disk with ``zinject``, scrubs, and asks the host to pull a data disk, the cache device and the
second pool's only disk out of the machine and put them back (QEMU ``device_del``/``device_add`` over QMP:
zfsmon.lab.guest.hostctl). Each fault's window is in DIR/steps.tsv, what ZFS said at its height in DIR/zfs/.
Then the matrix's figures from the recording (zfsmon.analysis.faults): per row the window, the events in plain
words, the intervals kept, the recovery, the workload's cost; printed and written to DIR/summary.json.
``--analyze-only`` prints them again from DIR without booting. tests/unit/test_guest_faults_openzfs24.py checks
a committed run (tests/data/openzfs-2.4/faults) on every commit.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.bench_guest_warmup import snapshot  # noqa: E402
from zfsmon.analysis.faults import matrix_summary  # noqa: E402
from zfsmon.lab.guest import boot, build  # noqa: E402
from zfsmon.lab.guest.runner import Disk, PoolLayout, _default_disks  # noqa: E402
from zfsmon.lab.guest.spec import GuestSpec  # noqa: E402
from zfsmon.store.reader import Recording  # noqa: E402

GUEST_SCRIPT = "bash /mnt/zfsmon/bench/guest_faults.sh"
ROWS = ("io", "checksum", "slow", "pull", "cache", "suspend")
#: the lab pool's disks and the second pool's one (the suspend row pulls it)
LAYOUT = PoolLayout(disks=(*_default_disks(), Disk("susp0", "extra", 512)))


def summarize(out: Path) -> dict:
    """The matrix's figures from the guest's share ``out/guest``, written to ``out/summary.json``."""
    share = out / "guest"
    steps = (share / "steps.tsv").read_text()
    with Recording.open(share / "faults.zfsmon") as rec:
        summary = matrix_summary(rec.samples(), rec.events(), steps)
    summary["stop"] = (share / "stop.txt").read_text().strip() if (share / "stop.txt").is_file() else None
    summary["versions"] = (share / "versions.txt").read_text().split() if (share / "versions.txt").is_file() else []
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def print_summary(summary: dict) -> None:
    print(f"versions: {' '.join(summary['versions'])}; recorder: {summary['stop']}")
    for row in summary["rows"]:
        print(f"{row['row']:9s} {row['seconds']:6.0f} s  recovery {row['recovery_s']}  gaps {row['longest_gap_s']} s  "
              f"workload {row['workload_ops_before']} -> {row['workload_ops_during']} ops/s")
        for text in row["events"][:12]:
            print(f"            {text}")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zfs", default="2.4", choices=("2.1", "2.3", "2.4"))
    ap.add_argument("--out", required=True, type=Path, help="a new directory for everything the run keeps")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"which rows, in this order (default all: {','.join(ROWS)})")
    ap.add_argument("--pull-seconds", type=int, default=330,
                    help="how long the data disk stays out (default 330: the degraded-pool alert's 5 min and more)")
    ap.add_argument("--hold", type=int, help="seconds each injected fault lasts (default: 45 for errors, 75 for the "
                    "slow disk and the pulled cache device)")
    ap.add_argument("--calm", type=int, help="seconds of calm after each row (default 40)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds the boot may take (default 3600)")
    ap.add_argument("--analyze-only", action="store_true", help="no boot: the figures of the run in --out")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if not args.analyze_only:
        bad = sorted(set(args.rows.split(",")) - set(ROWS))
        if bad:
            ap.error(f"unknown rows: {', '.join(bad)}")
        if out.exists() and any(out.iterdir()):
            ap.error(f"{out} is not empty: give a new directory")
        out.mkdir(parents=True, exist_ok=True)
        img = build.cached(GuestSpec(zfs=args.zfs)) or build.build(GuestSpec(zfs=args.zfs))
        src = snapshot(out)
        try:
            env = "".join(f"{k}={v} " for k, v in (("FAULTS_HOLD", args.hold), ("FAULTS_CALM", args.calm))
                          if v is not None)
            res = boot.run(img, f"{env}{GUEST_SCRIPT} {args.pull_seconds} {args.rows}", out / "guest", layout=LAYOUT, src=src,
                           timeout=args.timeout)
        finally:
            shutil.rmtree(src, ignore_errors=True)
        if res.exit_code != 0:
            raise SystemExit(f"the guest's command exited {res.exit_code}; see {out / 'guest'}")
        failed = out / "guest" / "failed.txt"
        if failed.is_file():
            raise SystemExit(f"a fault was not injected: {failed.read_text().strip()}")
    print_summary(summarize(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
