"""refnames.under lists one ref folder from the ref files, as git itself lists it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest

from gitswarm.memory import refnames


def git(path: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, text=True).stdout


def listed(path: Path, prefix: str) -> set[str]:
    return set(git(path, "for-each-ref", "--format=%(refname)", prefix).split())


@pytest.fixture
def repo(tmp_path: Path) -> pygit2.Repository:
    git(tmp_path, "init", "-q", "--bare", "r.git")
    repo = pygit2.Repository(str(tmp_path / "r.git"))
    sig = pygit2.Signature("t", "t@example.org")
    commit = repo.create_commit(None, sig, sig, "c\n", repo.TreeBuilder().write(), [])
    names = ["refs/heads/main", "refs/gitswarm/claims/a", "refs/gitswarm/claims/b", "refs/gitswarm/claimsX",
             "refs/gitswarm/workers/w1/heads/swarm/e1", "refs/gitswarm/workers/w1/gitswarm/ledger",
             "refs/gitswarm/workers/w2/heads/swarm/e2", "refs/gitswarm/zz"]
    for name in names:
        repo.references.create(name, commit)
    git(Path(repo.path), "tag", "-a", "-m", "t", "t1", str(commit))  # an annotated tag: a ^ line when packed
    git(Path(repo.path), "update-ref", "refs/gitswarm/claims/t", "refs/tags/t1")
    return repo


@pytest.mark.parametrize("prefix", ["refs/gitswarm/claims/", "refs/gitswarm/workers/", "refs/gitswarm/workers/w1/",
                                    "refs/heads/", "refs/nothing/", "refs/"])
def test_loose_packed_and_mixed_refs_are_listed_as_git_lists_them(repo: pygit2.Repository, prefix: str):
    path = Path(repo.path)
    assert refnames.under(repo, prefix) == listed(path, prefix)  # all loose
    git(path, "pack-refs", "--all")
    assert refnames.under(repo, prefix) == listed(path, prefix)  # all packed
    commit = repo.references["refs/heads/main"].target
    repo.references.create("refs/gitswarm/claims/c", commit)  # loose, beside packed ones
    repo.references.create("refs/gitswarm/workers/w1/heads/swarm/e3", commit)
    repo.references.delete("refs/gitswarm/claims/a")  # gone from packed-refs
    (path / "refs/gitswarm/claims/d.lock").write_text("")  # a writer's lock is no ref
    assert refnames.under(repo, prefix) == listed(path, prefix)


def test_an_unsorted_packed_refs_is_read_through_libgit2(repo: pygit2.Repository):
    path = Path(repo.path)
    git(path, "pack-refs", "--all")
    packed = path / "packed-refs"
    _, *lines = packed.read_text().splitlines()
    records = [line for line in lines if not line.startswith("^")]  # the peeled lines dropped: no longer claimed
    packed.write_text("\n".join(["# pack-refs with:", *reversed(records)]) + "\n")
    assert refnames.under(repo, "refs/gitswarm/claims/") == {
        "refs/gitswarm/claims/a", "refs/gitswarm/claims/b", "refs/gitswarm/claims/t"}


def test_only_a_ref_folder_is_asked_for(repo: pygit2.Repository):
    with pytest.raises(ValueError, match="ref folder"):
        refnames.under(repo, "refs/gitswarm/claims")
