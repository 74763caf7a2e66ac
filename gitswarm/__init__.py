"""gitswarm: a swarm of LLM agents whose only shared state is a Git repository.

Importing this package does no work: heavy modules (litellm, textual) load only when a
command needs them.
"""

__version__ = "0.1.0"
