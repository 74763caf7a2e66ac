"""The small core without I/O: the records the engine, the CLI and the dashboard share.

`Control` (how the outside steers a run), the stop reasons, the episodes' statuses and the
event records. Nothing here reads or writes a file or a repository, so a view can import it
without loading the engine.
"""
