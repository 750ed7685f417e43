"""Tests of zfsmon.trace and the D / bpftrace scripts."""
