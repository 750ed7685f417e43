"""Each subcommand's manual and options, importing only light modules (see :mod:`zfsmon.commands`)."""
