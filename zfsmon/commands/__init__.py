"""One subcommand, two modules: ``options/NAME.py`` (NAME, HELP, its manual, add_arguments(parser)) and
``NAME.py`` (run(args) -> int).

:mod:`zfsmon.cli` builds the parser from the options modules, which import only light modules (argparse,
:mod:`zfsmon.commands._timearg`, :mod:`zfsmon.defaults`, :mod:`zfsmon.model`): ``zfsmon --help``, ``--version``,
the manual page and shell completion never import a source, Textual, numpy or matplotlib. It imports the
implementation by name only to run the command. A module that fails to import is an error, never a subcommand
quietly missing. ``BATCH = True`` (in the options module): the command reads a long window whole, and runs with
the cyclic collector's young threshold raised (:mod:`zfsmon.gcpolicy`).
"""
