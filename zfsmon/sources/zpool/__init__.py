"""The zpool command's sources: `zpool iostat` (tables, histograms, latency), `zpool status` and health."""
