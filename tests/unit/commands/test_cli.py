"""The command line: every subcommand has a manual, and bad arguments give one line, never a traceback."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from zfsmon import cli, gcpolicy
from zfsmon.cli import COMMANDS, build_parser
from zfsmon.errors import UserError

#: written out, not derived: a subcommand that disappears (or stops importing) must fail this test
SUBCOMMANDS = ["top", "iostat", "arcstat", "record", "replay", "export", "info", "import", "parse", "soak",
               "attach", "analyze", "trace", "report", "exporter", "lab", "guest", "doctor", "metrics",
               "completion"]


def test_the_subcommands_are_exactly_these():
    assert [m.NAME for m in COMMANDS] == SUBCOMMANDS
    choices = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert list(choices) == SUBCOMMANDS


def test_a_subcommand_imports_its_own_module_only():
    """Start-up: `zfsmon export ...` must not pay for the dashboard's Textual or every other command's imports
    (importing them all cost each command about a second); each name still reaches its own options, and
    `--help` does not import the module that runs the command."""
    probe = ("import sys; from zfsmon import cli; p = cli.build_parser(cli._only(sys.argv[1:])); "
             "print(' '.join(sorted(m for m in sys.modules if m.startswith('zfsmon.commands.') or m == 'textual')))")
    for sub in SUBCOMMANDS:
        module = "import_" if sub == "import" else sub
        out = set(subprocess.run([sys.executable, "-c", probe, sub, "--help"], capture_output=True, text=True,
                                 timeout=120, check=True).stdout.split())
        assert "zfsmon.commands.options." + module in out, sub
        assert "zfsmon.commands." + module not in out, sub
        assert "textual" not in out, sub
        if sub == "completion":  # completes the whole tree
            assert len([m for m in out if m.startswith("zfsmon.commands.options.") and "._" not in m]) == len(SUBCOMMANDS)
            continue
        assert len([m for m in out if m.startswith("zfsmon.commands.options.") and "._" not in m]) <= 2, (sub, out)
    usage = subprocess.run([sys.executable, "-c", "from zfsmon import cli; cli.main(['import', '--help'])"],
                           capture_output=True, text=True, timeout=120)
    assert usage.stdout.startswith("usage: zfsmon import")


#: what only the commands that draw, plot, serve or query load (docs/performance.md, "Start-up")
HEAVY = ("textual", "rich", "numpy", "matplotlib", "prometheus_client", "psycopg", "psutil")


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["iostat", "--help"], ["completion", "bash"]])
def test_the_parser_imports_no_heavy_library(argv):
    """`zfsmon --version`, `--help` and `iostat --help` (and completion, which builds the whole tree) parse their
    arguments without importing Textual, rich, numpy, matplotlib, prometheus_client, psycopg or psutil: a script
    that calls zfsmon every few seconds must not pay for the dashboard."""
    probe = ("import sys; from zfsmon import cli\n"
             "try:\n    cli.build_parser(cli._only(sys.argv[1:])).parse_args(sys.argv[1:])\n"
             "except SystemExit:\n    pass\n"
             f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules) or 'none', file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120,
                         check=True)
    assert out.stderr.split() == ["none"], argv


def test_running_a_command_imports_its_implementation():
    """The other half of the split: the command that runs gets its own module (and its libraries)."""
    probe = ("import sys; from zfsmon import cli; code = cli.main(['metrics', '--entity', 'arc']); "
             "print(code, 'zfsmon.commands.metrics' in sys.modules, 'zfsmon.commands.iostat' in sys.modules, "
             "file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert out.stderr.split()[-3:] == ["0", "True", "False"]
    assert "arc" in out.stdout


def zfsmon(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zfsmon", *args], capture_output=True, text=True, timeout=120)


def test_top_level_help_lists_every_subcommand():
    out = zfsmon("--help")
    assert out.returncode == 0
    for name in SUBCOMMANDS:
        assert name in out.stdout


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_subcommand_help_reads_like_a_manual(sub):
    out = zfsmon(sub, "--help")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: zfsmon " + sub)
    # a description paragraph beyond the usage and options
    assert len(out.stdout.splitlines()) > 4


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_wrong_argument_is_one_line_and_nonzero(sub):
    out = zfsmon(sub, "--no-such-option-xyz")
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("zfsmon")


def test_unknown_subcommand():
    out = zfsmon("frobnicate")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_parser_builds():
    assert build_parser().prog == "zfsmon"


def test_lab_refuses_clearly_without_root(monkeypatch, capsys):
    import os

    from zfsmon import cli
    from zfsmon.lab import system

    monkeypatch.setattr(system, "kernel_zfs_present", lambda: False)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert cli.main(["lab", "up", "--pool", "never"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "zfsmon: the lab needs root (zfs-fuse, loop devices, cgroups): run it with sudo"


def test_batch_commands_run_with_fewer_collections_and_restore_the_threshold(monkeypatch):
    """analyze, report and export read a long window whole: the cyclic collector's young threshold is raised
    while they run (docs/performance.md, "Long soaks"), and put back after, a failing run included; other
    commands run with the interpreter's own."""
    before = gc.get_threshold()
    seen = {}

    def probe(name, fail=False):
        def run(_args):
            seen[name] = gc.get_threshold()[0]
            if fail:
                raise UserError("no")
            return 0
        return run

    batch = {m.NAME for m in COMMANDS if getattr(m, "BATCH", False)}
    assert batch == {"analyze", "report", "export"}
    for module, argv, fail in (("analyze", ["analyze", "x.zfsmon"], False),
                               ("export", ["export", "x.zfsmon", "--csv", "d"], True),
                               ("info", ["info", "x.zfsmon"], False)):
        monkeypatch.setattr(cli.implementation(module), "run", probe(module, fail))
        assert cli.main(argv) == (2 if fail else 0)
        assert gc.get_threshold() == before
    assert seen == {"analyze": gcpolicy.YOUNG_THRESHOLD, "export": gcpolicy.YOUNG_THRESHOLD, "info": before[0]}
