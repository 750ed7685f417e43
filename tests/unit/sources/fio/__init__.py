"""Tests of zfsmon.sources.fio on real fio JSON output."""
