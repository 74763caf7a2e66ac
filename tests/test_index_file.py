"""The index of main kept beside the run: what a reader loads is the index git gives at that
tip, or it is built again from git (the file is never the truth)."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pygit2
import pytest
from demo_run import demo_run
from test_index import first_parents
from test_index import state as walked_state
from typer.testing import CliRunner

from gitswarm.cli.main import app
from gitswarm.domain.index import MemoryIndex
from gitswarm.memory import indexfile, indexing
from gitswarm.memory.repo import Memory
from gitswarm.readmodel.read import read_run


@pytest.fixture
def run(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A copy of the session's demo run (real merges, reviews, nominations): the tests write in it."""
    copy = tmp_path / "run"
    shutil.copytree(demo_run(tmp_path_factory), copy)
    return copy


def state(index: MemoryIndex) -> dict:
    """Everything the index holds (its people and inherited work too)."""
    return {**walked_state(index), "people": index.people, "inherited_runs": index.inherited_runs,
            "inherited": index.inherited, "built_on": index.built_on, "seen_tip": index.seen_tip}


def built(repo: pygit2.Repository, tip: str) -> MemoryIndex:
    index = MemoryIndex()
    indexing.update(index, repo, tip)
    return index


def stored_tip(repo: pygit2.Repository) -> str | None:
    loaded = indexfile.load(repo)
    return loaded.seen_tip if loaded is not None else None


def test_the_engine_leaves_the_index_of_main_beside_the_run(run: Path):
    repo = pygit2.Repository(str(run))
    main = repo.references["refs/heads/main"].target
    left = indexfile.load(repo)
    assert left is not None and left.seen_tip is not None
    # main's tip, the solutions selection wrote at the run's end included: no reader takes them in
    # again (at 25,000 episodes each took a `status` 2.5 ms, 50 of them, every time)
    assert left.seen_tip == str(main)
    assert len(left.taken) > 10 and state(left) == state(built(repo, left.seen_tip))


def test_the_kept_index_follows_main_and_is_the_one_git_gives(run: Path):
    repo = pygit2.Repository(str(run))
    chain = first_parents(repo)
    indexfile.path_of(repo).unlink()
    assert indexfile.load(repo) is None
    for tip in [*chain[::3], chain[-1]]:
        before = indexfile.load(repo)
        kept = indexfile.kept(repo, tip)
        assert state(kept) == state(built(repo, tip))
        took = len(kept.taken) - (len(before.taken) if before is not None else 0)
        if before is None or took * indexfile.REREAD > len(before.authors):
            assert stored_tip(repo) == tip  # written back as it moved far
            assert state(indexfile.load(repo)) == state(kept)  # type: ignore[arg-type]
        else:
            assert stored_tip(repo) == before.seen_tip  # a few commits: the next reader takes them in again
    assert stored_tip(repo) != chain[0]  # the walk did write the file back as it went


def test_a_reader_writes_the_file_back_only_when_it_took_in_much(run: Path):
    repo = pygit2.Repository(str(run))
    chain = first_parents(repo)
    path = indexfile.path_of(repo)
    indexfile.save(built(repo, chain[-2]), repo)
    written = path.read_bytes()
    assert state(indexfile.kept(repo, chain[-1])) == state(built(repo, chain[-1]))
    assert path.read_bytes() == written  # one merge's commits: cheaper to take in again than to write all
    half = chain[len(chain) // 2]
    indexfile.save(built(repo, half), repo)
    assert state(indexfile.kept(repo, chain[-1])) == state(built(repo, chain[-1]))
    assert stored_tip(repo) == chain[-1]  # half the history: written back


def test_a_copy_is_the_index_and_does_not_move_with_it(run: Path):
    repo = pygit2.Repository(str(run))
    chain = first_parents(repo)
    live = built(repo, chain[len(chain) // 2])
    copy = live.copy()
    assert state(copy) == state(live)
    indexing.update(live, repo, chain[-1])
    assert state(copy) == state(built(repo, chain[len(chain) // 2])) != state(live)


@pytest.mark.parametrize("moved", ["back", "rewritten"])
def test_an_index_of_another_history_is_built_again(run: Path, moved: str):
    repo = pygit2.Repository(str(run))
    chain = first_parents(repo)
    indexfile.kept(repo, chain[-1])
    if moved == "back":
        tip = chain[len(chain) // 2]
    else:  # a commit beside main's history: its parent is an old tip, the file's tip is not in its history
        old = repo[chain[len(chain) // 2]]
        sig = pygit2.Signature("t", "t@t", 1, 0)
        tip = str(repo.create_commit(None, sig, sig, "beside\n", old.tree.id, [old.id]))
    kept = indexfile.kept(repo, tip)
    assert state(kept) == state(built(repo, tip)) != state(built(repo, chain[-1]))
    assert stored_tip(repo) == tip


@pytest.mark.parametrize("content", [b"", b"not json at all", b"\xe9\x01\x00", b"[]", b'{"format": "gitswarm-index/4"}',
                                     b'{"format": "gitswarm-index/3", "tip": "x"}'])
def test_an_unreadable_file_is_ignored_and_written_again(run: Path, content: bytes):
    repo = pygit2.Repository(str(run))
    tip = first_parents(repo)[-1]
    indexfile.path_of(repo).write_bytes(content)
    assert indexfile.load(repo) is None
    assert state(indexfile.kept(repo, tip)) == state(built(repo, tip))
    assert stored_tip(repo) == tip


def test_status_reads_the_same_with_and_without_the_file(run: Path):
    repo = pygit2.Repository(str(run))
    runner = CliRunner()
    first = runner.invoke(app, ["status", str(run), "--json"])
    assert first.exit_code == 0, first.output
    main = repo.references["refs/heads/main"].target
    tip = stored_tip(repo)  # the run's last merge, or main if the reader wrote it back
    assert tip is not None and (tip == str(main) or repo.descendant_of(main, pygit2.Oid(hex=tip)))
    again = runner.invoke(app, ["status", str(run), "--json"])
    assert again.output == first.output
    indexfile.path_of(repo).unlink()
    assert runner.invoke(app, ["status", str(run), "--json"]).output == first.output


def test_a_reader_leaves_the_engine_s_maps_unread_and_they_are_git_s_when_read(run: Path):
    repo = pygit2.Repository(str(run))
    memory = Memory(run)
    indexfile.save(built(repo, first_parents(repo)[-1]), repo)  # the file at main's tip: a quiet run
    index = memory.snapshot().kept_index()
    read_run(memory, index)  # what `status` reads
    assert set(index._deferred) == {"files_of", "taken"}  # never made: a status does not pay for them
    whole = built(repo, index.seen_tip)  # type: ignore[arg-type]
    assert index.taken == whole.taken and index.files_of == whole.files_of  # made on first read
    assert not index._deferred


def test_two_threads_reading_a_deferred_map_first_get_the_one_map(run: Path):
    repo = pygit2.Repository(str(run))
    index = indexfile.load(repo)
    assert index is not None
    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(lambda _: index.files_of, range(64)))
    assert all(f is found[0] for f in found) and found[0]


def test_a_file_whose_engine_line_changed_is_ignored(run: Path):
    repo = pygit2.Repository(str(run))
    path = indexfile.path_of(repo)
    head, _, engine = path.read_bytes().partition(b"\n")
    path.write_bytes(head + b"\n" + engine.replace(b"notes/", b"Notes/", 1))
    assert indexfile.load(repo) is None
    path.write_bytes(head)  # the second line lost
    assert indexfile.load(repo) is None
