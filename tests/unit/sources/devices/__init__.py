"""Tests of zfsmon.sources.devices on real diskstats, iostat and fsstat captures."""
