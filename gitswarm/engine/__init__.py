"""The swarm engine: scheduler, episodes, tools, merger and selection on one event loop."""
