"""The ``zfsmon`` command: parses arguments and hands over to the layers. Nothing else lives here."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from contextlib import nullcontext
from types import ModuleType
from typing import ContextManager, Optional, Sequence, Tuple

from zfsmon import __version__, gcpolicy
from zfsmon.errors import UserError, printable
from zfsmon.outfile import os_message

#: the subcommands' modules, in the order ``zfsmon --help`` lists them. Each has two: ``zfsmon.commands.options.M``
#: (its manual and options, importing only light modules, so the whole parser, ``--help`` and ``--version`` start
#: fast) and ``zfsmon.commands.M`` (its ``run``, with the sources, Textual, numpy or matplotlib it needs), imported
#: only to run it.
COMMAND_MODULES: Tuple[str, ...] = (
    "top", "iostat", "arcstat", "record", "replay", "export", "info", "import_", "parse", "soak", "attach",
    "analyze", "trace", "report", "exporter", "lab", "guest", "doctor", "metrics", "completion",
)
#: the commands whose name is not their module's (``import`` is a Python keyword)
_MODULE_OF = {"import": "import_"}


def command_module(module: str) -> ModuleType:
    """The subcommand's manual and options (``NAME``, ``HELP``, its docstring, ``add_arguments``)."""
    return importlib.import_module(f"zfsmon.commands.options.{module}")


def implementation(module: str) -> ModuleType:
    """The module whose ``run(args)`` does the subcommand's work; imported when it runs."""
    return importlib.import_module(f"zfsmon.commands.{module}")


def __getattr__(name: str) -> object:
    """``COMMANDS``: every subcommand's options module, imported (for the manual page, completion and tests)."""
    if name == "COMMANDS":
        return tuple(command_module(m) for m in COMMAND_MODULES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


DESCRIPTION = """\
zfsmon watches ZFS the way a storage engineer needs to: per-vdev I/O with each vdev's role
(data, log/SLOG, cache/L2ARC, special, spare), ARC and L2ARC hit rates, ZIL activity and
per-dataset activity, next to the block-device view so that "goose eggs" (a device that says
zero while ZFS moves data) stand out. It records everything, replays and exports it, traces
latency distributions with DTrace/bpftrace, and correlates pgbench soak throughput with cache
warm-up.
"""

EPILOG = """\
examples:
  zfsmon lab up --slow-data 100     build a throw-away zfs-fuse pool with slow data disks
  zfsmon top --soak --lab           the dashboard, with a pgbench soak on the lab
  zfsmon iostat zlab 5              role-aware per-vdev view every 5 s
  zfsmon record --duration 4h       record every available source
  zfsmon export run.zfsmon --csv out/

Run `zfsmon SUBCOMMAND --help` for each subcommand's manual.
"""


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line and exit 2 (argparse prints usage too, which is long)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"zfsmon: {self.prog.split(' ', 1)[-1] if ' ' in self.prog else ''}"
                     f"{': ' if ' ' in self.prog else ''}{message} (see `{self.prog} --help`)\n")


def build_parser(only: Optional[str] = None) -> argparse.ArgumentParser:
    """The whole command tree, or with ``only`` (a module of :data:`COMMAND_MODULES`) that subcommand alone."""
    parser = _Parser(prog="zfsmon", description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"zfsmon {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=_Parser)
    for module in (only,) if only else COMMAND_MODULES:
        mod = command_module(module)
        doc = (mod.__doc__ or mod.HELP).strip()
        p = subs.add_parser(mod.NAME, help=mod.HELP, description=doc,
                            epilog=getattr(mod, "EPILOG", None),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
        p.set_defaults(_module=module, _batch=getattr(mod, "BATCH", False))
    parser.set_defaults(_root_parser=parser)  # for `zfsmon completion`, which completes the whole tree
    return parser


def _only(args: Sequence[str]) -> Optional[str]:
    """The module of the subcommand ``args`` name, when the rest of the tree is not needed to run it
    (``completion`` completes the whole tree; an unknown name is refused with the list of them)."""
    if not args or args[0] == "completion":
        return None
    module = _MODULE_OF.get(args[0], args[0])
    return module if module in COMMAND_MODULES else None


def batch_gc(batch: bool) -> ContextManager[None]:
    """A batch command (its module's ``BATCH = True``: it reads a long window whole) runs with fewer collections of
    the cyclic collector (:func:`zfsmon.gcpolicy.fewer_collections`); any other with the interpreter's own."""
    return gcpolicy.fewer_collections() if batch else nullcontext()


def main(argv: Optional[Sequence[str]] = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list:
        # The dashboard is the default on a terminal; elsewhere, say how to use the tool.
        if sys.stdout.isatty() and sys.stdin.isatty():
            args_list = ["top"]
        else:
            build_parser().print_help()
            return 0
    parser = build_parser(_only(args_list))
    args = parser.parse_args(args_list)
    module = getattr(args, "_module", None)
    if module is None:
        parser.print_help()
        return 2
    try:
        with batch_gc(getattr(args, "_batch", False)):
            code = int(implementation(module).run(args) or 0)
        sys.stdout.flush()  # a full disk under `> file` shows here, not in the interpreter's exit
        return code
    except UserError as exc:
        print(f"zfsmon: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _drop_stdout()
        return 0
    except OSError as exc:  # writing standard output (disk full, EIO), or a file a command did not expect to fail
        doing = "cannot write" if exc.filename is None else "failed"
        print(f"zfsmon: {printable(os_message(exc.filename or 'standard output', exc, doing))}", file=sys.stderr)
        if exc.filename is None:
            _drop_stdout()
        return 1


def _drop_stdout() -> None:
    """Standard output can take no more: point it at /dev/null, so the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
