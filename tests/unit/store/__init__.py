"""Tests of zfsmon.store, the recordings."""
