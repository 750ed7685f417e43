"""One module per subcommand: NAME, HELP, add_arguments(parser), run(args) -> int.

The order of COMMANDS is the order ``zfsmon --help`` lists them in.
"""

COMMANDS = (
    "top", "iostat", "arcstat", "record", "replay", "export", "info", "import_", "parse",
    "soak", "attach", "analyze", "trace", "report", "exporter", "lab", "doctor", "metrics",
)
