"""`zfsmon soak` at work; its manual and options are :mod:`zfsmon.commands.options.soak`."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time

from zfsmon import outfile
from zfsmon.commands.record import default_out
from zfsmon.engine import Session, check_output_path, zfs_collectors_or_warn
from zfsmon.errors import UserError
from zfsmon.redact import command_line
from zfsmon.sources.pgbench.pgstat import PgStatCollector
from zfsmon.trace import trace_collectors
from zfsmon.workload import fio as fiowl
from zfsmon.workload import target
from zfsmon.workload.pgcluster import DEFAULT_PORT
from zfsmon.workload.soak import SoakCollector, SoakPlan, tee_log_for

LAB_PORT = DEFAULT_PORT
LAB_DB = target.LAB_DB




def run(args: argparse.Namespace) -> int:
    if args.fio or args.fio_preset:
        return run_fio(args)
    if args.trace or args.backend:
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
        session.collectors += trace_collectors(args.trace, args.interval, [args.lab] if args.lab else [],
                                               args.backend)
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
    if (runner.returncode not in (0, None) and not runner.stopped) or not runner.documents:
        raise UserError(f"fio failed (exit status {runner.returncode}); see {output} and the recording's "
                        "error events", exit_code=1)
    return 0
