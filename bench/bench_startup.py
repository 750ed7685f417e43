#!/usr/bin/env python3
"""Start-up cost of the zfsmon command line, against a bare interpreter.

A CLI that scripts call every few seconds (`zfsmon iostat`, `zfsmon arcstat`) must start fast: the parser is
built from light modules and each command imports its libraries only when it runs (docs/performance.md,
"Start-up"). This runs each command --runs times, one after another, and prints a markdown table of the
wall-clock and CPU (user + system, of the child) seconds: median, min and max.

    python3 bench/bench_startup.py [--runs 20] [--pool zlab]

The commands: `python3 -c pass`, `zfsmon --version`, `zfsmon --help`, `zfsmon iostat --help`; with --pool,
`zfsmon iostat POOL 1 1`'s time to its first report (the first line on its standard output) and to its exit.
zfsmon runs as `python3 -m zfsmon` from this tree (the tree's package first on the path).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent


def _child_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def run_once(argv: Sequence[str], env: Dict[str, str]) -> Tuple[float, Optional[float], float]:
    """(wall seconds to exit, wall seconds to the first line on standard output or None, child CPU seconds)."""
    cpu0 = _child_cpu()
    t0 = time.perf_counter()
    with subprocess.Popen(list(argv), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          stdin=subprocess.DEVNULL) as child:
        assert child.stdout is not None
        first = child.stdout.readline()
        t_first = time.perf_counter() - t0 if first else None
        child.stdout.read()
        rc = child.wait()
    wall = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"bench_startup: {' '.join(argv)} exited {rc}")
    return wall, t_first, _child_cpu() - cpu0


def _row(name: str, values: List[float]) -> str:
    return (f"| {name} | {statistics.median(values):.3f} | {min(values):.3f} | {max(values):.3f} |")


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20, help="runs of each command (default 20)")
    ap.add_argument("--pool", help="also time `zfsmon iostat POOL 1 1` (a lab pool, or a real one)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter (default: this one)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    zfsmon = [args.python, "-m", "zfsmon"]
    commands: List[Tuple[str, List[str]]] = [
        ("`python3 -c pass`", [args.python, "-c", "pass"]),
        ("`zfsmon --version`", [*zfsmon, "--version"]),
        ("`zfsmon --help`", [*zfsmon, "--help"]),
        ("`zfsmon iostat --help`", [*zfsmon, "iostat", "--help"]),
    ]
    if args.pool:
        commands.append((f"`zfsmon iostat {args.pool} 1 1`", [*zfsmon, "iostat", args.pool, "1", "1"]))
    rows: List[str] = []
    for name, cmd in commands:
        walls, firsts, cpus = [], [], []
        for _ in range(args.runs):  # interleaving would mix the caches' states; each command's runs in a row
            wall, first, cpu = run_once(cmd, env)
            walls.append(wall)
            cpus.append(cpu)
            if first is not None:
                firsts.append(first)
        rows.append(_row(f"{name} wall", walls))
        rows.append(_row(f"{name} CPU", cpus))
        if name.startswith("`zfsmon iostat ") and "--help" not in name and firsts:
            rows.append(_row(f"{name} first report", firsts))
    print(f"{args.runs} runs each; seconds\n")
    print("| command | median | min | max |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
