"""Tests of zfsmon.sources.kstat on real kstat captures of every platform."""
