"""Tests of zfsmon.lab that need no lab: the pool create and the guest's shares."""
