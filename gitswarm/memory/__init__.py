"""The memory: the run's git repository, written straight into the object database.

`Memory` (in `repo.py`) is the one entry point; the other modules are its parts:
`paths` checks what agents may write, `trailers` formats commit messages, `trees` edits
trees without a worktree, `compose` merges branches into `main`, `read` answers queries.
"""
