"""Tests of zfsmon.sources: discovery, detection and the sources that are no family's."""
