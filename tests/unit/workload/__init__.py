"""Tests of zfsmon.workload: fio and pgbench run and followed."""
