"""Turn a captured text log into samples printed as CSV (one line per value; columns as `zfsmon export
--long`, see docs/export.md). The kind is detected from the text unless --kind names it; `--list` shows the
kinds, each with a command that prints such a text. Parsing is exactly what `zfsmon import` and the live
collectors do, so this is also how to check that zfsmon reads a given capture.

What the text itself cannot show can be said: --iostat-flags gives the letters the `zpool iostat` run had
(`l`/`q` for the columns of headerless -H rows, `y` when its first report is an interval), --topology a
`zpool status` capture for the roles and parents -H rows and -r/-w histograms do not print. Without one,
zfsmon asks this host's `zpool status` when it has a pool of that name with those devices, and otherwise
guesses the tree from the text; every guess is one line on standard error starting with `note:`.

Kstat dumps are timed by their snapshot time, seconds since boot: as `zfsmon import` does, the last dump is
placed at the file's modification time (dumps of one boot keep their gaps), said in a `note:`. A capture
with printed times (`zpool iostat -T u`) gives its interval rows the interval those times show.
"""

from __future__ import annotations

import argparse

from zfsmon.commands._timearg import seconds

NAME = "parse"
HELP = "parse a captured text log (zpool iostat, arcstats, arcstat, pgbench) and print its samples as CSV"
EPILOG = """\
examples:
  zfsmon parse iostat.log                       detect the format
  zfsmon parse --kind zpool-iostat iostat.log --interval 5
  zfsmon parse iostat-vHpl.log --iostat-flags l --topology zpool-status.txt
  zpool iostat -v 1 3 | zfsmon parse -
  zfsmon parse --list                           the kinds, each with a command that prints it
"""


#: what the letters of --iostat-flags may be (zpool iostat's own; the ones zfsmon uses are l, q and y)
IOSTAT_LETTERS = set("vHplqwryLPgTudnc")


def flags_arg(text: str) -> str:
    """An argparse type: ``zpool iostat`` letters as typed on its command line (``-vHpl``, ``lq``, ``y``)."""
    letters = text.replace("-", "").replace(" ", "")
    bad = sorted(set(letters) - IOSTAT_LETTERS)
    if not letters or bad:
        raise argparse.ArgumentTypeError(f"{text!r}: not zpool iostat flag letters (e.g. `lq`, `y`, `--iostat-flags=-vHpl`)")
    return letters


def add_options(p: argparse.ArgumentParser) -> None:
    """The options `zfsmon parse` and `zfsmon import` share, spelled the same in both."""
    p.add_argument("--kind", metavar="NAME", help="the format (default: detected); "
                   "`zfsmon parse --list` shows the names")
    p.add_argument("--interval", type=seconds, metavar="S", help="the capture's interval, when the text omits it")
    p.add_argument("--iostat-flags", type=flags_arg, metavar="LETTERS",
                   help="the flags the `zpool iostat` capture was made with, when its text cannot show them: "
                   "l and/or q (columns of headerless -H rows), y (its first report is an interval)")
    p.add_argument("--topology", metavar="FILE", help="a `zpool status` capture of the same pool: roles and "
                   "parents for -H rows and -r/-w histograms (default: a zpool status among the files given, "
                   "this host's pool of that name, or guessed from the text)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("args", nargs="*", metavar="FILE", help="the captured text (`-` = stdin); "
                   "`zfsmon parse KIND FILE` still works but --kind KIND is the way to name it")
    add_options(p)
    p.add_argument("--every", type=seconds, metavar="D", help="downsample (counters summed, gauges averaged)")
    p.add_argument("--events", action="store_true", help="also print events (errors, resets) to standard error")
    p.add_argument("--list", action="store_true", help="list the formats, each with an example command, and exit")
