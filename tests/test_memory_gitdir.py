"""memory.gitdir: the writes of the remote and the experiment, each a commit of a tree or a ref
moved by compare-and-swap, and the same bytes as the pygit2 calls they replaced."""

from __future__ import annotations

import threading
from pathlib import Path

import pygit2
import pytest
from conftest import git
from pygit2.enums import FileMode

from gitswarm.memory import trees
from gitswarm.memory.gitdir import GitDir, RefMoved
from gitswarm.memory.write import COMMITTER


def test_a_commit_of_files_moves_no_ref_and_is_the_commit_pygit2_made(tmp_path: Path):
    made = GitDir.init(tmp_path / "r.git", initial_head="main")
    commit = made.commit({"claim.json": b'{"a": 1}'}, "claim: e00001\n", author=("box-w01", "box-w01@gitswarm.local"),
                         when=1000)
    assert made.refs("refs/") == set()
    repo = pygit2.Repository(str(tmp_path / "r.git"))  # how claims.py wrote a claim commit before
    builder = repo.TreeBuilder()
    builder.insert("claim.json", repo.create_blob(b'{"a": 1}'), FileMode.BLOB)
    before = repo.create_commit(None, pygit2.Signature("box-w01", "box-w01@gitswarm.local", 1000, 0),
                                pygit2.Signature(*COMMITTER, 1000, 0), "claim: e00001\n", builder.write(), [])
    assert commit == str(before)
    assert made.file(commit, "claim.json") == b'{"a": 1}'
    assert made.file(commit, "absent") is None
    assert made.commit_time(commit) == 1000


def test_a_commit_on_a_base_writes_and_removes_files(tmp_path: Path):
    made = GitDir.init(tmp_path / "r.git")
    base = made.commit({"problems/p/a.md": b"a", "problems/p/notes/n.md": b"n"}, "base\n")
    child = made.commit({"problems/p/notes/n.md": None, "problems/p/b.md": b"b"}, "child\n", [base], base=base)
    listed = git(tmp_path / "r.git", "ls-tree", "-r", "--name-only", child).split()
    assert listed == ["problems/p/a.md", "problems/p/b.md"]
    assert git(tmp_path / "r.git", "rev-parse", f"{child}^").strip() == base
    assert child in made and "1" * 40 not in made


def test_a_ref_moves_only_from_the_value_named(tmp_path: Path):
    made = GitDir.init(tmp_path / "r.git")
    one, two = made.commit({"a": b"1"}, "one\n"), made.commit({"a": b"2"}, "two\n")
    made.move("refs/gitswarm/x", one, None)
    with pytest.raises(RefMoved) as raised:
        made.move("refs/gitswarm/x", two, None)  # a create of a ref that exists
    assert raised.value.now == one
    with pytest.raises(RefMoved):
        made.move("refs/gitswarm/x", two, two)
    made.move("refs/gitswarm/x", two, one)
    assert made.ref("refs/gitswarm/x") == two
    assert made.refs("refs/gitswarm/") == {"refs/gitswarm/x"}


def test_a_held_lock_is_waited_for(tmp_path: Path):
    made = GitDir.init(tmp_path / "r.git")
    one = made.commit({"a": b"1"}, "one\n")
    lock = tmp_path / "r.git" / "refs" / "gitswarm" / "x.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("another writer\n")
    release = threading.Timer(0.3, lock.unlink)
    release.start()
    try:
        made.move("refs/gitswarm/x", one, None)
    finally:
        release.join()
    assert made.ref("refs/gitswarm/x") == one


def test_follow_sets_or_deletes_whatever_the_ref_held(tmp_path: Path):
    made = GitDir.init(tmp_path / "r.git")
    one, two = made.commit({"a": b"1"}, "one\n"), made.commit({"a": b"2"}, "two\n")
    made.follow("refs/gitswarm/x", one)
    made.follow("refs/gitswarm/x", two)
    assert made.ref("refs/gitswarm/x") == two
    made.follow("refs/gitswarm/x", None)
    made.follow("refs/gitswarm/x", None)  # already gone: nothing to do
    assert made.ref("refs/gitswarm/x") is None


def test_a_reader_reads_config_history_books_and_what_a_commit_wrote(tmp_path: Path):
    made = GitDir.init(tmp_path / "r.git")
    made.configure({"gitswarm.remote": "file:///srv/run.git"})
    assert made.config("gitswarm.remote") == "file:///srv/run.git" and made.config("gitswarm.worker") is None
    root = made.commit({"a.md": b"a", "gone.md": b"g"}, "root\n")
    child = made.commit({"b.md": b"b", "a.md": b"A", "gone.md": None}, "child\n", [root], base=root)
    assert made.written(root) == [] and sorted(made.written(child)) == ["a.md", "b.md"]
    assert made.in_history(root, child) and not made.in_history(child, root) and not made.in_history(None, child)
    book = made.commit({"episodes/e000/e00001.json": b'{"status": "done"}'}, "ledger\n")
    made.move("refs/gitswarm/ledger", book, None)
    assert made.record("ledger", "episodes/e000/e00001.json") == {"status": "done"}
    assert made.records("ledger", "episodes") == {"episodes/e000/e00001.json": {"status": "done"}}
    assert made.record("grades", "x.json") is None


def test_a_rev_resolves_to_its_commit_or_to_none(tmp_path: Path):
    made = GitDir.init(tmp_path / "r.git")
    root = made.commit({"a.md": b"a"}, "root\n")
    made.move("refs/heads/main", root, None)
    assert made.resolve(root) == root and made.resolve(root[:12]) == root and made.resolve("refs/heads/main") == root
    assert made.resolve("f" * 40) is None and made.resolve("not a rev") is None


def test_a_file_s_versions_along_a_ref_and_the_files_below_a_folder(tmp_path: Path):
    made = GitDir.init(tmp_path / "r.git")
    one = made.commit({"g/p/a.json": b"1", "g/q/b.json": b"b"}, "one\n")
    two = made.commit({"g/x.json": b"x"}, "two\n", [one], base=one)
    three = made.commit({"g/p/a.json": b"2"}, "three\n", [two], base=two)
    made.move("refs/gitswarm/grades", three, None)
    assert made.versions("refs/gitswarm/grades", "g/p/a.json") == [b"2", b"1"]
    assert made.versions("refs/gitswarm/none", "g/p/a.json") == []
    assert sorted(made.below(three, "g")) == [b"2", b"b", b"x"]
    assert list(made.below(three, "g/x.json")) == [] and list(made.below(three, "absent")) == []


def test_a_diff_names_each_change_with_its_mode_and_content(tmp_path: Path):
    made = GitDir.init(tmp_path / "r.git")
    one = made.commit({"p/a.md": b"a", "p/gone.md": b"g"}, "one\n")
    two = made.commit({"p/a.md": b"A", "p/new.md": b"n", "p/gone.md": None}, "two\n", [one], base=one)
    found = {d.path: d for d in made.diff(one, two)}
    assert {p: d.status for p, d in found.items()} == {"p/a.md": "M", "p/gone.md": "D", "p/new.md": "A"}
    assert made.blob(found["p/new.md"].blob) == b"n" and found["p/new.md"].mode == trees.FILE
    assert made.info(two).parents == (one,) and made.note(two, "refs/notes/transcripts") is None
