"""Run a pgbench soak against PostgreSQL and record it together with the ZFS sources in one recording.

Two modes. `loop` runs `pgbench -T SECONDS ...` again and again with a pause
between runs (the classic `while :; do pgbench -T 58 -c 30 -j 10 -N db; sleep 2;
done | tee soak.log`): each run's summary becomes a TPS point and the runs are
marked in the recording. `continuous` runs one long pgbench with
`-P INTERVAL --progress-timestamp` (optionally `--log --aggregate-interval`),
giving a TPS point every interval. Everything pgbench prints is also appended
to a plain log file, as tee would.

Options after `--` go to pgbench untouched. The connection comes from libpq's
environment (PGHOST, PGPORT, PGUSER, PGDATABASE, ...) or --conn (a conninfo
string or postgresql:// URI). With --lab, zfsmon starts a PostgreSQL cluster of
its own on the lab pool's dataset (initdb as user postgres, port 55432, a
private socket directory, shared_buffers=16MB so that reads reach ZFS) and
stops it afterwards; its data directory is kept for the next soak.

pg_stat_database of the soak's database is sampled too (needs psycopg), so the
whole read path can be followed: PostgreSQL buffers -> ARC -> L2ARC -> disks.
Afterwards, `zfsmon analyze FILE` tells what happened.
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import MAX_SECONDS, number, port, seconds, whole
from zfsmon.defaults import LAB_DB, LAB_PG_PORT, SOAK_CONTINUOUS, SOAK_LOOP, fio_preset_names

NAME = "soak"
HELP = "run a pgbench soak (loop or continuous) or a fio job, and record it with the ZFS sources"
EPILOG = """\
examples:
  zfsmon soak --lab --init-scale 40 --duration 4h -- -c 30 -j 10 -N
        the classic: pgbench -T 58 ...; sleep 2, for four hours, on a cluster of zfsmon's own on the lab
  zfsmon soak --mode continuous -P 10 --duration 2h --conn postgresql://bench@db1/bench -- -c 8 -S
        one two-hour pgbench with a progress line every 10 s against an existing database
  PGDATABASE=bench zfsmon soak --out soak.zfsmon --log soak.log -- -c 16 -j 4
        until Ctrl-C, connection from libpq's environment
  zfsmon soak --lab zlab --fio-preset randread-sweep --fio-runtime 10
        fio's 8 KiB random reads at 1, 2, 4 ... 64 outstanding I/Os on the lab pool (psync + numjobs)
  zfsmon soak --fio mytest.fio --out fio.zfsmon
        a job file of your own; fio's JSON goes to fio.fio.json beside the recording
  zfsmon analyze soak.zfsmon
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=(SOAK_LOOP, SOAK_CONTINUOUS), default=SOAK_LOOP,
                   help="loop: repeated pgbench -T runs with a pause (default); continuous: one long run with -P")
    p.add_argument("--run-seconds", "-T", type=whole(1, int(MAX_SECONDS)), default=58, metavar="N",
                   help="loop mode: -T of each pgbench run (default 58)")
    p.add_argument("--pause", type=number(0.0, MAX_SECONDS, lo_open=False), default=2.0, metavar="S",
                   help="loop mode: seconds between runs (default 2)")
    p.add_argument("--progress", "-P", type=whole(1, int(MAX_SECONDS)), metavar="N",
                   help="pgbench -P N --progress-timestamp (default 1: TPS every second)")
    p.add_argument("--aggregate-interval", type=whole(1, int(MAX_SECONDS)), metavar="N",
                   help="continuous mode: also write pgbench --log --aggregate-interval=N files next to --log")
    p.add_argument("--duration", "-d", type=seconds, metavar="D",
                   help="how long to soak (90s, 30m, 4h); default: until Ctrl-C")
    p.add_argument("--hours", type=number(0.0, MAX_SECONDS / 3600), metavar="H", help="the same in hours (4 = --duration 4h)")
    p.add_argument("--init-scale", type=whole(1, 1_000_000), metavar="S",
                   help="first initialise the database with pgbench -i -s S (size is printed first)")
    p.add_argument("--conn", metavar="CONNINFO",
                   help="conninfo or postgresql:// URI (default: libpq environment, PGDATABASE ...)")
    p.add_argument("--dbname", metavar="DB", help=f"database name (with --lab default {LAB_DB})")
    p.add_argument("--lab", nargs="?", const="zlab", metavar="POOL",
                   help="run a PostgreSQL cluster of zfsmon's own on the lab pool's dataset (default pool zlab)")
    p.add_argument("--cold", action="store_true", help="--lab: empty the ARC and L2ARC after loading the database "
                   "(export/import of the lab pool), so the warm-up is seen from cold")
    p.add_argument("--port", type=port, default=LAB_PG_PORT, help=f"--lab: port of that cluster (default {LAB_PG_PORT})")
    p.add_argument("--no-pgstat", action="store_true", help="do not sample pg_stat_database")
    p.add_argument("--no-zfs", action="store_true", help="record only the workload (no ZFS collectors)")
    p.add_argument("--interval", "-i", type=seconds, default=5.0, metavar="S",
                   help="seconds between ZFS/pg_stat readings (default 5)")
    p.add_argument("--out", "-o", metavar="FILE",
                   help="recording file (default soak-HOST-TIME.zfsmon in the state directory: /var/lib/zfsmon as "
                        "root, else $XDG_STATE_HOME/zfsmon)")
    p.add_argument("--log", metavar="FILE", help="plain log of pgbench's output (default: the recording's name "
                   "with .pgbench.log)")
    p.add_argument("--quiet", "-q", action="store_true", help="do not echo pgbench's output")
    fio = p.add_argument_group("fio instead of pgbench")
    fio.add_argument("--fio", metavar="JOBFILE", help="run this fio job file (json+ status every --interval)")
    fio.add_argument("--fio-preset", choices=fio_preset_names(), metavar="NAME",
                     help="run a preset 8 KiB test: " + ", ".join(fio_preset_names()) + " (-sweep: 1..64 "
                     "outstanding I/Os as psync numjobs)")
    fio.add_argument("--fio-dir", metavar="DIR", help="--fio-preset: directory of its file (default: the lab "
                     "pool's dataset with --lab, else the current directory)")
    fio.add_argument("--fio-size", default="256M", metavar="SIZE", help="--fio-preset: file size (default 256M)")
    fio.add_argument("--fio-runtime", type=whole(1, int(MAX_SECONDS)), default=10, metavar="S",
                     help="--fio-preset: seconds per step (default 10)")
    fio.add_argument("--fio-depth", type=whole(1, 1024), default=1, metavar="N",
                     help="--fio-preset without -sweep: outstanding I/Os (numjobs, default 1)")
    fio.add_argument("--trace", action="append", default=[], metavar="NAME",
                     help="also record a tracing script's per-vdev latency histograms (repeatable), e.g. "
                     "fusevdevlat on the zfs-fuse lab, vdevlat elsewhere: `zfsmon analyze` sets them beside fio's")
    fio.add_argument("--backend", choices=("bpftrace", "dtrace"), help="Linux tracing backend for --trace: "
                     "bpftrace (default) or dtrace (the D scripts, under a DTrace you have)")
    p.add_argument("pgbench_args", nargs=argparse.REMAINDER, metavar="-- PGBENCH_OPTIONS",
                   help="options passed to pgbench (after --)")
