"""The warm-up story on kernel OpenZFS, start to end, in the QEMU guest: one command, five boots.

    python3 bench/bench_guest_warmup.py --zfs 2.3 --out DIR      (about an hour; root, qemu-system-x86)

The lab (``zfsmon guest run`` options, docs/openzfs-guest.md): data disks limited to ``--slow-data`` reads per
second each (QEMU throttling, like hard disks), log and cache fast, an ARC of ``--arc-mb`` that a pgbench database
of ``--scale`` does not fit in but the 1 GiB L2ARC does, the pool's disks kept in DIR/disks across boots.

0. a boot that loads the database with the data disks at full speed (QEMU's limit is per boot: loading on
   disks of 15 reads/s would take the best part of an hour, index builds reading the table 8 KiB at a time);
1. first boot, throttled: a control soak without the cache device, from cold; the cache device
   added back and the warm-up from cold in ``zfsmon top`` (tmux 160x50, screens captured, once at 80x24);
   the soak stopped in the middle of a run and the guest shut down;
2. second boot, same disks: the pool imported (the L2ARC rebuilt from its log blocks, OpenZFS 2.0+) and the
   soak resumed in ``zfsmon top``, appending to the same recording;
3. third boot, the same again with ``l2arc_rebuild_enabled=0``: the L2ARC starts empty after the reboot;
4. a fourth boot on a fresh pool (``--fio-seconds 0`` leaves it out): the classic L2ARC test, fio's 8 KiB random
   reads at a fixed depth over a file four times the ARC, from cold: IOPS over time as the L2ARC fills.

Then ``zfsmon analyze`` of the recordings and the numbers: the warm-up's ratio and time to 90 %, the control's,
the rebuild (bytes, buffers, seconds, read beside it every 0.5 s) and both recovery times. Everything stays in DIR:
each boot's share (recordings, screens, arcstats, logs) and summary.json. ``--analyze-only`` prints the numbers
again from DIR without booting.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from zfsmon.analysis.findings import restart_compared  # noqa: E402
from zfsmon.analysis.restart import Restart  # noqa: E402
from zfsmon.lab.guest import boot, build  # noqa: E402
from zfsmon.lab.guest.runner import PoolLayout  # noqa: E402
from zfsmon.lab.guest.spec import GuestSpec  # noqa: E402

GUEST_SCRIPT = "bash /mnt/zfsmon/bench/guest_warmup.sh"
BOOTS = ("load", "first", "rebuild", "cold", "fio")


#: OpenZFS writes the L2ARC's log blocks (what a rebuild reads after a reboot) only on a cache device of at
#: least l2arc_rebuild_blocks_min_l2size (1 GiB); the lab's 1 GiB disk, partitioned, is 1014 MiB
L2_MIN_BYTES = 512 * 1024 * 1024


def _params(args: argparse.Namespace, extra: Tuple[str, ...] = ()) -> List[str]:
    return [f"zfs_arc_max={args.arc_mb * 1024 * 1024}", f"l2arc_rebuild_blocks_min_l2size={L2_MIN_BYTES}", *extra]


def snapshot(out: Path) -> Path:
    """The tree the guest runs, copied into ``out/src`` (what HEAD holds plus the working tree's changes): a run of
    most of an hour must not pick up edits made meanwhile (bash reads a running script as it goes)."""
    dest = out / "src"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.split(b"\0")
    for raw in files:
        rel = raw.decode()
        src = REPO / rel
        if rel and src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def run_boots(args: argparse.Namespace, out: Path, boots: Tuple[str, ...]) -> None:
    """The boots asked for, each in its own share under ``out``; the three of one pool share ``out/disks``."""
    spec = GuestSpec(zfs=args.zfs)
    img = build.cached(spec) or build.build(spec)
    src = snapshot(out) if not (out / "src").is_dir() else out / "src"
    disks = out / "disks"
    if "load" in boots and disks.exists():
        raise SystemExit(f"{disks} exists: give a new --out (the load boot needs fresh disks)")
    machine = boot.Machine(memory_mib=args.memory, cpus=2)
    plan = {
        "load": (f"{GUEST_SCRIPT} load {args.scale}", PoolLayout(), ()),
        "first": (f"{GUEST_SCRIPT} first {args.control} {args.warm}", PoolLayout(slow_data_iops=args.slow_data), ()),
        "rebuild": (f"{GUEST_SCRIPT} restart rebuild {args.restart}",
                    PoolLayout(slow_data_iops=args.slow_data, import_existing=False), ()),
        "cold": (f"{GUEST_SCRIPT} restart cold {args.restart}",
                 PoolLayout(slow_data_iops=args.slow_data, import_existing=False), ("l2arc_rebuild_enabled=0",)),
    }
    for name in (b for b in BOOTS[:4] if b in boots):
        command, layout, extra = plan[name]
        share = out / name
        share.mkdir(parents=True)
        if name in ("rebuild", "cold"):
            before = out / BOOTS[BOOTS.index(name) - 1]
            shutil.copyfile(before / "soak.zfsmon", share / "soak.zfsmon")
        if name != "load" and not disks.is_dir():
            raise SystemExit(f"boot {name} needs the pool's disks of the boot before in {disks}")
        res = boot.run(img, command, share, layout=layout, src=src, machine=machine, timeout=args.timeout,
                       disks=disks, params=_params(args, extra))
        if res.exit_code != 0:
            raise SystemExit(f"boot {name}: the guest's command exited {res.exit_code}; see {share}")
    if "cold" in boots:
        shutil.rmtree(disks, ignore_errors=True)  # 6 sparse GiB: the recordings and captures are what is kept
    if "fio" in boots:
        share = out / "fio"
        share.mkdir(parents=True)
        fresh = out / "disks-fio"
        try:
            res = boot.run(img, f"{GUEST_SCRIPT} fio {args.fio_size} {args.fio_seconds} {args.fio_depth}", share,
                           layout=PoolLayout(slow_data_iops=args.slow_data), src=src, machine=machine,
                           timeout=args.timeout, disks=fresh, params=_params(args))
        finally:
            shutil.rmtree(fresh, ignore_errors=True)
        if res.exit_code != 0:
            raise SystemExit(f"boot fio: the guest's command exited {res.exit_code}; see {share}")


def _analyze(recording: Path) -> Dict[str, Any]:
    cp = subprocess.run([sys.executable, "-m", "zfsmon", "analyze", "--json", str(recording)], capture_output=True,
                        text=True, cwd=REPO, timeout=600)
    if cp.returncode != 0:
        raise SystemExit(f"zfsmon analyze {recording} failed: {cp.stderr.strip()}")
    return json.loads(cp.stdout)


def _topic(report: Dict[str, Any], topic: str) -> List[Dict[str, Any]]:
    return [f for f in report.get("findings", []) if f.get("topic") == topic]


def rebuild_from_poll(text: str, import_start: float) -> Dict[str, Optional[float]]:
    """From the 0.5 s reads of arcstats beside the import: what the rebuild restored, and when it was done (the
    first read at which ``l2_rebuild_success`` counted it), in seconds after the import began."""
    done_at: Optional[float] = None
    last: Dict[str, float] = {}
    for line in text.splitlines():
        ts_text, _, rest = line.partition(" ")
        try:
            ts = float(ts_text)
            vals = {k: float(v) for k, v in (kv.split("=", 1) for kv in rest.split() if "=" in kv)}
        except ValueError:
            continue
        if vals:
            last = vals
        if done_at is None and vals.get("l2_rebuild_success", 0) >= 1:
            done_at = ts
    return {"rebuild_success": last.get("l2_rebuild_success"), "rebuilt_bytes": last.get("l2_rebuild_size"),
            "rebuilt_bufs": last.get("l2_rebuild_bufs"), "rebuilt_log_blks": last.get("l2_rebuild_log_blks"),
            "rebuild_done_s": done_at - import_start if done_at is not None else None}


def as_restart(numbers: Dict[str, Any]) -> Optional[Restart]:
    """A restart finding's numbers (``analyze --json``) as the figures they were made from, None if they are not."""
    names = set(Restart.__dataclass_fields__)
    try:
        return Restart(**{k: v for k, v in numbers.items() if k in names})
    except TypeError:
        return None


def summarize(out: Path) -> Dict[str, Any]:
    """The numbers of a finished run, from its shares."""
    first, rebuild, cold = (out / b for b in BOOTS[1:4])
    summary: Dict[str, Any] = {}
    warm = _analyze(first / "soak-after-first.zfsmon")
    control = _analyze(first / "control.zfsmon") if (first / "control.zfsmon").is_file() else {}
    summary["warmup"] = [f.get("numbers", {}) | {"text": f["text"]} for f in _topic(warm, "warmup")]
    summary["control"] = [f.get("numbers", {}) | {"text": f["text"]} for f in _topic(control, "warmup")] or \
        [{"text": "no warm-up: TPS stayed flat (no finding)"}]
    whole = _analyze(cold / "soak.zfsmon")
    summary["restarts"] = [f.get("numbers", {}) | {"text": f["text"]} for f in _topic(whole, "restart")]
    found = [as_restart(f.get("numbers", {})) for f in _topic(whole, "restart")]
    warm_r = next((r for r in found if r is not None and r.rebuilt), None)
    cold_r = next((r for r in found if r is not None and not r.rebuilt), None)
    if warm_r is not None and cold_r is not None:
        summary["compared"] = restart_compared(warm_r, cold_r)
    fio = out / "fio" / "fio.zfsmon"
    if fio.is_file():
        summary["fio"] = [f.get("numbers", {}) | {"text": f["text"]} for f in _topic(_analyze(fio), "warmup")]
    for name, share in (("rebuild", rebuild), ("cold", cold)):
        poll = share / f"rebuild-poll-{name}.txt"
        start = share / f"import-start-{name}.txt"
        if poll.is_file() and start.is_file():
            summary[f"poll_{name}"] = rebuild_from_poll(poll.read_text(), float(start.read_text().strip()))
    return summary


def print_summary(summary: Dict[str, Any]) -> None:
    for key in ("warmup", "control", "restarts", "fio"):
        for item in summary.get(key, []):
            print(f"{key}: {item['text']}")
    if summary.get("compared"):
        print(f"compared: {summary['compared']}")
    for name in ("rebuild", "cold"):
        poll = summary.get(f"poll_{name}")
        if poll:
            size = poll.get("rebuilt_bytes") or 0
            done = poll.get("rebuild_done_s")
            print(f"{name} boot, read beside the import: l2_rebuild_success {poll.get('rebuild_success')}, "
                  f"{size / 2**20:.1f} MiB in {poll.get('rebuilt_bufs')} buffers, "
                  + (f"done {done:.1f} s after the import began" if done is not None else "no rebuild"))


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zfs", default="2.3", choices=("2.1", "2.3", "2.4"))
    ap.add_argument("--out", required=True, type=Path, help="a new directory for everything the run keeps")
    ap.add_argument("--scale", type=int, default=30, help="pgbench -i -s (default 30: ~500 MB, ~260 MB with the "
                    "pool's lz4, four times the ARC)")
    ap.add_argument("--control", type=int, default=300, help="seconds of the control soak (default 300; 0: none)")
    ap.add_argument("--warm", type=int, default=900, help="seconds of the warm-up soak (default 900)")
    ap.add_argument("--restart", type=int, default=300, help="seconds of each soak after a reboot (default 300)")
    ap.add_argument("--slow-data", type=int, default=15, help="reads/s of each data disk (default 15)")
    ap.add_argument("--arc-mb", type=int, default=64, help="zfs_arc_max in MiB (default 64, ZFS's least)")
    ap.add_argument("--memory", type=int, default=1536, help="guest memory in MiB (default 1536: ZFS's ARC "
                    "minimum is 1/32 of it, below 64)")
    ap.add_argument("--boots", default=",".join(BOOTS), help="which boots, in order (default all: "
                    f"{','.join(BOOTS)}); first, rebuild and cold need the disks the boot before left in DIR")
    ap.add_argument("--fio-seconds", type=int, default=540, help="seconds of the fio boot's random reads "
                    "(default 540)")
    ap.add_argument("--fio-size", default="256M", help="its file (default 256M: four times the ARC)")
    ap.add_argument("--fio-depth", type=int, default=4, help="its outstanding reads (default 4)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds each boot may take (default 3600)")
    ap.add_argument("--analyze-only", action="store_true", help="no boots: the numbers of the run in --out")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    boots = tuple(b for b in args.boots.split(",") if b)
    if any(b not in BOOTS for b in boots):
        raise SystemExit(f"--boots: each of {', '.join(BOOTS)}, not {args.boots}")
    if not args.analyze_only:
        taken = [b for b in boots if (out / b).exists()]
        if taken or ("load" in boots and out.exists() and any(out.iterdir())):
            raise SystemExit(f"{out} already holds {', '.join(taken) or 'files'}: give a new directory")
        out.mkdir(parents=True, exist_ok=True)
        run_boots(args, out, boots)
    summary = summarize(out)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print_summary(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
