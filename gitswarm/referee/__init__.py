"""The referee: grades answers, programs and proofs against hidden parts, out of the swarm's sight."""
