"""The memory: the run's git repository, written straight into the object database.

`Memory` (in `repo.py`) is the one entry point, awaited by the engine through `store.py`
`Store`, which owns the process's one git thread; the other modules are its parts:
`paths` checks what agents may write, `commitmeta` is the codec of every commit's metadata
(a typed record per kind of commit, over the line format of `trailers`), `trees` edits
trees without a worktree, `compose` merges branches into `main`, `read` answers queries,
`gitdir` reads and writes the repositories that are not the run's (a remote's mirror, a
replay being made). pygit2 is this package's own: no module outside it imports pygit2
(`tests/test_pygit2_private.py`).
"""
