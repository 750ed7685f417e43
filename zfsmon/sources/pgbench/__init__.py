"""pgbench's printed output and log files, and PostgreSQL's own statistics beside a pgbench workload."""
