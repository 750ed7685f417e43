"""Tests of zfsmon.sources.pgbench on real pgbench output and logs."""
