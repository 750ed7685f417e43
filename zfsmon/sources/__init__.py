"""Sources: one module per command or kstat family, each a pure parser plus a collector."""
