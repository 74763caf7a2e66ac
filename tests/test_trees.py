"""`trees.diff` against libgit2's own tree diff, on real repositories: the same changes for
every pair of trees, while it opens only the folders whose ids differ."""

from __future__ import annotations

import random
from pathlib import Path

import pygit2
import pytest
from pygit2.enums import DeltaStatus, FileMode, Option

from gitswarm.memory import trees

NAMES = ("a", "b", "notes", "40000 x", "reviews", "z.md", "code")


def libgit2_diff(base: pygit2.Tree, other: pygit2.Tree) -> trees.Changes:
    """What `trees.diff` did before: libgit2's diff of the whole trees."""
    changes: trees.Changes = {}
    for delta in base.diff_to_tree(other).deltas:
        if delta.status == DeltaStatus.DELETED:
            changes[delta.old_file.path] = None
        else:
            if delta.old_file.path != delta.new_file.path:
                changes[delta.old_file.path] = None
            changes[delta.new_file.path] = (delta.new_file.id, delta.new_file.mode)
    return changes


def random_tree(repo: pygit2.Repository, rng: random.Random, depth: int) -> dict:
    """Nested dict of names -> file text or a folder (dict)."""
    tree: dict = {}
    for _ in range(rng.randint(0, 5)):
        name = rng.choice(NAMES) + (str(rng.randint(0, 3)) if rng.random() < 0.5 else "")
        tree[name] = random_tree(repo, rng, depth - 1) if depth > 0 and rng.random() < 0.4 else f"{rng.randint(0, 3)}\n"
    return tree


def mutate(rng: random.Random, tree: dict, depth: int) -> dict:
    """A copy of `tree` with a few files changed, added, deleted, made folders or made files."""
    out = dict(tree)
    for name in list(out):
        roll = rng.random()
        if isinstance(out[name], dict) and roll < 0.5:
            out[name] = mutate(rng, out[name], depth - 1)
        elif roll < 0.1:
            del out[name]
        elif roll < 0.2:
            out[name] = f"changed {rng.random()}\n"
        elif roll < 0.25 and depth > 0:
            out[name] = {"inner.md": "made a folder\n"}
    if rng.random() < 0.3:
        out[f"new{rng.randint(0, 9)}"] = "added\n"
    return out


def write(repo: pygit2.Repository, tree: dict, executable: frozenset[str] = frozenset()) -> pygit2.Tree:
    builder = repo.TreeBuilder()
    for name, value in tree.items():
        if isinstance(value, dict):
            sub = write(repo, value, executable)
            if len(sub):
                builder.insert(name, sub.id, FileMode.TREE)
        else:
            mode = FileMode.BLOB_EXECUTABLE if name in executable else FileMode.BLOB
            builder.insert(name, repo.create_blob(value.encode()), mode)
    return repo[builder.write()]


def test_the_diff_is_libgit2s_on_random_trees(tmp_path: Path):
    repo = pygit2.init_repository(str(tmp_path / "repo"), bare=True)
    rng = random.Random(7)
    for _ in range(300):
        before = random_tree(repo, rng, 3)
        after = mutate(rng, before, 3)
        executable = frozenset({"b", "a1"}) if rng.random() < 0.2 else frozenset()  # a mode changes alone
        base, other = write(repo, before), write(repo, after, executable)
        assert trees.diff(repo, base, other) == libgit2_diff(base, other)
        assert trees.diff(repo, other, base) == libgit2_diff(other, base)
        assert trees.diff(repo, base, base) == {}


def test_equal_folders_are_not_opened(tmp_path: Path):
    """One file changed among many folders: only the folders on its path are read. The other
    49 problems' folders are ids of trees the repository does not hold (libgit2 checks no
    object's existence while strict creation is off), so opening any of them would fail, as
    libgit2's own diff does."""
    repo = pygit2.init_repository(str(tmp_path / "repo"), bare=True)
    notes = write(repo, {f"n{j}.md": f"{j}\n" for j in range(20)})
    p007 = write(repo, {"notes": {f"n{j}.md": f"{j}\n" for j in range(20)}, "statement.md": "s\n"})
    p007_after = write(repo, {"notes": {f"n{j}.md": f"{j}\n" for j in range(20)} | {"new.md": "x\n"},
                              "statement.md": "s\n"})
    pygit2.option(Option.ENABLE_STRICT_OBJECT_CREATION, False)
    try:
        sides = []
        for problem in (p007, p007_after):
            problems = repo.TreeBuilder()
            for i in range(50):
                absent = pygit2.Oid(hex=f"{i + 1:040x}")
                problems.insert(f"p{i:03d}", problem.id if i == 7 else absent, FileMode.TREE)
            root = repo.TreeBuilder()
            root.insert("problems", problems.write(), FileMode.TREE)
            sides.append(repo[root.write()])
    finally:
        pygit2.option(Option.ENABLE_STRICT_OBJECT_CREATION, True)
    base, other = sides
    assert notes.id != p007.id
    assert trees.diff(repo, base, other) == {"problems/p007/notes/new.md": (repo.create_blob(b"x\n"), FileMode.BLOB)}
    with pytest.raises((KeyError, pygit2.GitError)):
        libgit2_diff(base, other)  # it opens every folder
