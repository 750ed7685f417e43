"""Tests of zfsmon.sources.zpool on real `zpool iostat` and `zpool status` captures."""
