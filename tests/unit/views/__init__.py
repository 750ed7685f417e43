"""Tests of zfsmon.views: the exporter, the Grafana dashboard and the alert rules."""
