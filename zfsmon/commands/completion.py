"""`zfsmon completion` at work; its manual and options are :mod:`zfsmon.commands.options.completion`."""

from __future__ import annotations

import argparse

import shtab

from zfsmon.errors import UserError


def run(args: argparse.Namespace) -> int:
    root = getattr(args, "_root_parser", None)
    if root is None:  # cli.build_parser gives every subcommand the whole parser; anything else is a bug here
        raise UserError("completion: no command-line parser to complete (run it as `zfsmon completion SHELL`)")
    print(shtab.complete(root, shell=args.shell), end="")
    return 0
