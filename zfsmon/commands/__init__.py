"""One module per subcommand: NAME, HELP, add_arguments(parser), run(args) -> int.

:mod:`zfsmon.cli` imports each of them by name and lists them in ``zfsmon --help`` in its order; a module
that fails to import is an error, never a subcommand quietly missing. ``BATCH = True``: the command reads a long
window whole, and runs with the cyclic collector's young threshold raised (:mod:`zfsmon.gcpolicy`).
"""
