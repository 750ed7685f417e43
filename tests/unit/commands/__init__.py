"""Tests of zfsmon.commands through the real command line: parse, import, export, report, doctor."""
