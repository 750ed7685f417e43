"""Save what a guest run captured as test data: tests/data/openzfs-VERSION/ with a PROVENANCE.md.

    sudo ZFSMON_GUEST=1 ZFSMON_GUEST_OUT=/var/tmp/zfsmon-guest/tier python3 -m pytest -m guest tests/guest
    python3 tests/guest/save_captures.py /var/tmp/zfsmon-guest/tier
    python3 tests/guest/save_captures.py DIR --script tests/data/openzfs-2.4/capture.sh --image KEY

The files are the project's own outputs (the guest ran tests/guest/scenario.sh, or the script named by
--script, with --image naming the image when the run has no timings.json): each one's exact
command comes from the run's captures/COMMANDS.tsv, the versions from the guest and its image manifest.
Only small text files are kept (the data directory is committed).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from zfsmon.lab.guest.spec import CACHE_ROOT

REPO = Path(__file__).resolve().parents[2]
MAX_BYTES = 256 * 1024
#: subdirectories of a version's data written by other scripts or runs, each with its own PROVENANCE.md (the bcc
#: backend's capture, the pgbench capture, a second run's captures, the zpool_influxdb run's), and a version's own
#: capture script: kept as they are
KEEP = ("bcc", "pgbench", "run2", "influxdb", "slow", "capture.sh", "capture-slow.sh")
#: raw reads the scenario takes outside captures/, also worth keeping (command, what)
EXTRA = {
    "arcstats.before": ("cat /proc/spl/kstat/zfs/arcstats", "before the recorded fio workload"),
    "arcstats.after": ("cat /proc/spl/kstat/zfs/arcstats", "after it"),
    "zil.before": ("cat /proc/spl/kstat/zfs/zil", "before the recorded fio workload"),
    "zil.after": ("cat /proc/spl/kstat/zfs/zil", "after it"),
    "beside-iostat-vp.txt": ("zpool iostat -vp -T u zguest 5", "beside `zfsmon record --interval 5`, around fio"),
    "objset.before": ("cat /proc/spl/kstat/zfs/zguest/objset-0x... (zguest/db)", "before the recorded fio workload"),
    "objset.after": ("cat /proc/spl/kstat/zfs/zguest/objset-0x... (zguest/db)", "after it"),
    "txgs.before": ("cat /proc/spl/kstat/zfs/zguest/txgs", "before the recorded fio workload"),
    "txgs.after": ("cat /proc/spl/kstat/zfs/zguest/txgs", "after it"),
    "fio.json": ("fio --rw=randrw --rwmixread=70 --fsync=16 --runtime=25 --bs=8k ... --output-format=json",
                 "the recorded workload"),
    "trace-zfsslower.txt": ("zfsmon trace zfsslower 5 --slow 1000 --no-histograms",
                            "around one 16 MiB write made slow on purpose"),
    "scrape.2": ("zfsmon exporter --interval 2 --pool zguest; GET /metrics", "under the captures' fio load"),
    "bcc.out": ("python3 -m zfsmon.trace.bcc_tool zfsslower,zil 5 1000", "the bcc backend around fio-bcc.json's run"),
    "fio-bcc.json": ("fio --rw=randrw --rwmixread=70 --fsync=16 --runtime=15 --bs=8k ... --output-format=json",
                     "under bcc"),
}


def _commands(out: Path) -> List[Tuple[str, str, str]]:
    rows = []
    for line in (out / "captures" / "COMMANDS.tsv").read_text().splitlines():
        name, cmd, rc = line.split("\t")
        rows.append((name, cmd, rc))
    return rows


def _manifest(out: Path, image: Optional[str] = None) -> Optional[Dict[str, object]]:
    try:
        key = image or json.loads((out / "timings.json").read_text())["image"]
    except (OSError, ValueError, KeyError):
        return None
    path = CACHE_ROOT / key / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _is_text(path: Path) -> bool:
    data = path.read_bytes()
    return b"\0" not in data and len(data) <= MAX_BYTES


def save(out: Path, dest_root: Path, script: str = "tests/guest/scenario.sh", image: Optional[str] = None) -> Path:
    version_text = (out / "captures" / "zfs-version.txt").read_text()
    m = re.search(r"zfs-kmod-(\d+\.\d+)\.(\S+)", version_text)
    if not m:
        raise SystemExit(f"no zfs-kmod version in {out / 'captures' / 'zfs-version.txt'}")
    dest = dest_root / f"openzfs-{m.group(1)}"
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.iterdir():  # all but KEEP: others' captures from the same guest, with their own provenance
        if old.name in KEEP:
            continue
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    kept: List[Tuple[str, str, str]] = []
    skipped: List[str] = []
    for name, cmd, rc in _commands(out):
        src = out / "captures" / name
        if not src.is_file() or not _is_text(src) or src.stat().st_size == 0:
            empty = src.is_file() and src.stat().st_size == 0
            why = f"failed, exit {rc}: not in this version" if empty and rc != "0" else (
                "empty" if empty else "binary or large")
            skipped.append(f"`{name}` ({why})")
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        kept.append((name, cmd, rc))
    notes: Dict[str, str] = {}
    for name, (cmd, note) in EXTRA.items():
        if (out / name).is_file():
            shutil.copyfile(out / name, dest / name)
            kept.append((name, cmd, "0"))
            notes[name] = note
    man = _manifest(out, image)
    uname = (out / "uname.txt").read_text().strip() if (out / "uname.txt").exists() else "?"
    lines = [
        f"# OpenZFS {m.group(1)} captures (live, from the project's QEMU guest)",
        "",
        "Produced by zfsmon itself: `zfsmon guest` booted a Debian guest with the kernel OpenZFS module, and",
        f"`{script}` ran the commands below in it (then `tests/guest/save_captures.py` copied them",
        "here). Pool `zguest`: two 2-way mirrors (`virtio-data0..3`, 1 GiB sparse virtio disks), SLOG",
        "`virtio-log0` (512 MiB), L2ARC `virtio-cache0` (1 GiB); dataset `zguest/db` recordsize 8k;",
        "zfs_arc_max 256 MiB; a small fio load (8k random read/write, fsync every 16 writes) ran during the",
        "captures. The guest ran under QEMU TCG: timings and rates are 10-30x slower than native; formats,",
        "names, roles and counts are what matters.",
        "",
        "## Versions",
        "",
        "```",
        version_text.strip(),
        uname,
        "```",
        "",
    ]
    if man:
        pk = man.get("packages", {})
        lines += [f"Image `{man.get('key')}` built {man.get('built')}: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(pk.items())) + ".", ""]
    lines += ["## Files and the exact commands", "", "| file | command | exit |", "|---|---|---|"]
    lines += [f"| `{n}` | `{c}`{' (' + notes[n] + ')' if n in notes else ''} | {rc} |" for n, c, rc in kept]
    if skipped:
        lines += ["", "Left out: " + ", ".join(skipped) + "."]
    (dest / "PROVENANCE.md").write_text("\n".join(lines) + "\n")
    return dest


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="a guest run's output directory (ZFSMON_GUEST_OUT)")
    ap.add_argument("--dest", type=Path, default=REPO / "tests" / "data", help="default tests/data")
    ap.add_argument("--script", default="tests/guest/scenario.sh", help="the script the guest ran")
    ap.add_argument("--image", help="the image's key, when the run has no timings.json")
    args = ap.parse_args(argv)
    dest = save(args.out, args.dest, args.script, args.image)
    print(f"saved {sum(1 for p in dest.rglob('*') if p.is_file())} files in {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
