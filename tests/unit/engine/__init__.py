"""Tests of zfsmon.engine, the sampler and the run loop."""
