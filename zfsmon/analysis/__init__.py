"""Analysis: pure computations over samples (rates, ratios, correlation). No I/O here."""
