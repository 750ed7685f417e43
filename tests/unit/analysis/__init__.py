"""Tests of zfsmon.analysis on real recordings and captures."""
