"""fio's JSON output as workload samples."""
