"""Workloads zfsmon drives itself: pgbench soaks and the throw-away PostgreSQL cluster they can run on."""
