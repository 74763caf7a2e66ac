"""One git remote as the run's shared memory: workers anywhere fetch from it and push to it.

`transport` keeps a local bare mirror of a remote and moves the remote's refs only by
compare-and-swap pushes (`git push --force-with-lease`, `--atomic` for several refs) through
the git CLI (`gitcli`: git's own credentials, ssh and https); local objects are pygit2's.
`claims` lets workers claim episodes with those pushes; `layout` names the remote's refs and
who may push each. `urls` masks credentials in remote addresses; `errors` holds what a
failed git call raises; `daemon` is a git server on loopback for tests and benchmarks.
"""
