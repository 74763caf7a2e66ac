"""The report of a run: results, cost and the compounding figures (md, json, html)."""
