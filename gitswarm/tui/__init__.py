"""The live dashboard: a textual app fed by engine events (live or tailed from the event log)."""
