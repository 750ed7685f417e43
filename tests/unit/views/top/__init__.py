"""Tests of zfsmon.views.top, the dashboard."""
