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
import os
import shlex
import sys
import time

from zfsmon import outfile
from zfsmon.commands._timearg import MAX_SECONDS, number, port, seconds, whole
from zfsmon.commands.record import default_out
from zfsmon.engine import Session, check_output_path, zfs_collectors_or_warn
from zfsmon.errors import UserError
from zfsmon.redact import command_line
from zfsmon.sources.pgstat import PgStatCollector
from zfsmon.trace import trace_collectors
from zfsmon.workload import fio as fiowl
from zfsmon.workload import target
from zfsmon.workload.pgcluster import DEFAULT_PORT
from zfsmon.workload.soak import CONTINUOUS, LOOP, SoakCollector, SoakPlan, tee_log_for

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

LAB_PORT = DEFAULT_PORT
LAB_DB = target.LAB_DB


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=(LOOP, CONTINUOUS), default=LOOP,
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
    p.add_argument("--port", type=port, default=LAB_PORT, help=f"--lab: port of that cluster (default {LAB_PORT})")
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
    fio.add_argument("--fio-preset", choices=fiowl.preset_names(), metavar="NAME",
                     help="run a preset 8 KiB test: " + ", ".join(fiowl.preset_names()) + " (-sweep: 1..64 "
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
    p.add_argument("pgbench_args", nargs=argparse.REMAINDER, metavar="-- PGBENCH_OPTIONS",
                   help="options passed to pgbench (after --)")


def run(args: argparse.Namespace) -> int:
    if args.fio or args.fio_preset:
        return run_fio(args)
    if args.trace:
        raise UserError("--trace goes with --fio/--fio-preset (a pgbench soak: zfsmon record --trace beside it)")
    pgb_args = target.check_pgbench_args(args.pgbench_args or [])
    total = args.duration if args.duration else (args.hours * 3600 if args.hours else None)
    if total is not None and total <= 0:
        raise UserError("--duration must be positive")
    if args.run_seconds < 1:
        raise UserError("--run-seconds must be at least 1")
    now = time.time()
    out = args.out or default_out(now, kind="soak")
    log = args.log or tee_log_for(out)
    for path in (out, log):
        check_output_path(path)

    with Session(args.interval) as session:
        tgt = target.prepare(args.lab, args.port, args.dbname, args.conn)
        session.add_cleanup(tgt.stop)
        target.ready(tgt, args.init_scale, log, args.quiet, args.cold)
        plan = SoakPlan(mode=args.mode, run_seconds=args.run_seconds, pause=args.pause, progress=args.progress,
                        total=total, pgbench_args=pgb_args, dbname=tgt.dbarg, tee=log,
                        aggregate_interval=args.aggregate_interval,
                        log_prefix=(os.path.splitext(os.path.abspath(log))[0] + ".agg") if args.aggregate_interval
                        else None, pgbench=tgt.pgbench, env=tgt.env)
        soak = SoakCollector(plan, echo=None if args.quiet else sys.stderr)
        session.collectors.append(soak)
        if not args.no_pgstat:
            session.collectors.append(PgStatCollector(tgt.conninfo))
        if not args.no_zfs:
            session.collectors += zfs_collectors_or_warn(args.interval, tgt.lab_pool)
        meta = {"argv": command_line(["zfsmon", *sys.argv[1:]]), "interval": f"{args.interval:g}", "kind": "soak",
                "soak_mode": args.mode, "pgbench_log": os.path.abspath(log),
                "pgbench_args": command_line(pgb_args)}
        meta.update(tgt.meta)
        print(f"zfsmon: soak ({args.mode}) recording into {out}; pgbench output in {log}"
              f"{'' if total is None else f'; for {total:g} s'}", file=sys.stderr)
        session.record_into(out, meta)
        outcome = session.run(done=soak.finished)
    done = len(soak.parser.summaries)
    print(f"zfsmon: {out}: {outcome.intervals} intervals, {outcome.samples} samples, {outcome.events} events; "
          f"pgbench runs: {soak.runs_started} started, {done} completed", file=sys.stderr)
    if outcome.failure:
        raise UserError(outcome.failure, exit_code=1)
    if soak.runs_started and not done and soak.parser.run == 0:
        raise UserError(f"pgbench never got going; its output is in {log}", exit_code=1)
    return 0


def run_fio(args: argparse.Namespace) -> int:
    """``--fio JOBFILE`` / ``--fio-preset NAME``: fio instead of pgbench, with the ZFS sources."""
    if args.fio and args.fio_preset:
        raise UserError("give --fio JOBFILE or --fio-preset NAME, not both")
    if args.pgbench_args:
        raise UserError("options after -- are pgbench's; fio takes them in its job file")
    now = time.time()
    out = args.out or default_out(now, kind="soak")
    output = fiowl.output_for(out)
    for path in (out, output):
        check_output_path(path)
    if args.fio:
        fiowl.check_jobfile(args.fio)
        jobfile = os.path.abspath(args.fio)
    else:
        directory = args.fio_dir or (fiowl.lab_directory(args.lab) if args.lab else os.getcwd())
        if not os.path.isdir(directory):
            raise UserError(f"--fio-dir {directory} is not a directory")
        jobfile = os.path.splitext(out)[0] + ".fio"
        check_output_path(jobfile)
        text = fiowl.preset_jobfile(args.fio_preset, fiowl.PresetPlan(
            directory=os.path.abspath(directory), size=args.fio_size, runtime_s=args.fio_runtime,
            depth=args.fio_depth))
        with outfile.atomic(jobfile) as fh:
            fh.write(text)
    argv = fiowl.run_argv(jobfile, args.interval)
    runner = fiowl.FioCollector(argv, output=output)
    with Session(args.interval) as session:
        session.collectors.append(runner)
        if not args.no_zfs:
            session.collectors += zfs_collectors_or_warn(args.interval, args.lab)
        session.collectors += trace_collectors(args.trace, args.interval, [args.lab] if args.lab else [])
        meta = {"argv": command_line(["zfsmon", *sys.argv[1:]]), "interval": f"{args.interval:g}", "kind": "soak",
                "workload": "fio", "fio_argv": shlex.join(argv), "fio_output": os.path.abspath(output),
                "fio_preset": args.fio_preset or ""}
        print(f"zfsmon: fio soak recording into {out}; fio's JSON in {output}; job file {jobfile}", file=sys.stderr)
        session.record_into(out, meta)
        outcome = session.run(done=runner.finished, duration=args.duration)
    print(f"zfsmon: {out}: {outcome.intervals} intervals, {outcome.samples} samples, {outcome.events} events; "
          f"fio: {runner.documents} JSON documents, exit status {runner.returncode}", file=sys.stderr)
    if outcome.failure:
        raise UserError(outcome.failure, exit_code=1)
    if runner.returncode not in (0, None) or not runner.documents:
        raise UserError(f"fio failed (exit status {runner.returncode}); see {output} and the recording's "
                        "error events", exit_code=1)
    return 0
