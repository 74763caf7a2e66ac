"""memory.objects gives an object of the kind asked for, and says so when it is another."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitswarm.memory import objects


def test_an_object_of_another_kind_or_a_symbolic_ref_is_a_type_error(tmp_path: Path):
    repo = pygit2.init_repository(str(tmp_path / "r.git"), bare=True)
    blob = repo.create_blob(b"text")
    builder = repo.TreeBuilder()
    builder.insert("a.md", blob, pygit2.enums.FileMode.BLOB)
    tree = builder.write()
    sig = pygit2.Signature("t", "t@example.org")
    commit = repo.create_commit("refs/heads/main", sig, sig, "c\n", tree, [])

    assert objects.blob(repo, blob).data == b"text"
    assert objects.tree(repo, str(tree))["a.md"].id == blob
    assert objects.commit(repo, commit).tree_id == tree
    assert objects.target(repo.references["refs/heads/main"]) == commit
    with pytest.raises(TypeError, match="is a tree, not a blob"):
        objects.blob(repo, tree)
    with pytest.raises(TypeError, match="is a blob, not a commit"):
        objects.commit(repo, blob)
    with pytest.raises(KeyError):
        objects.tree(repo, pygit2.Oid(hex="1" * 40))
    repo.references.create("refs/heads/alias", "refs/heads/main")
    with pytest.raises(TypeError, match="symbolic"):
        objects.target(repo.references["refs/heads/alias"])
