"""`gitswarm export`: a run's episodes as training data.

`credit` defines how a problem's grade is credited to the commits that led to it; `labels`
reads what the run's git says about each episode; `transcripts` turns an old run's readable
transcripts back into messages; `records` lays an episode out as a chat record or as one
record per model call; `run` ties them together with the filters.
"""
