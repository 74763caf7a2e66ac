"""The names of the files gitswarm keeps in a run's folder beside its repository, for the
writer that owns each and the readers that look at it (the dashboard reads the lock)."""

LOCK_NAME = "gitswarm.lock"
"""The run lock (an flock, `engine.runlock.run_lock`): one `solve` per run."""
