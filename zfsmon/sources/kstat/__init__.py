"""The ZFS kstat sources (arcstats, zil, per-pool and per-dataset kstats) and the kstat text shapes."""
