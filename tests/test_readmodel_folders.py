"""The read model keeps what each problem folder on main says (counts, kind, selection) by the
folder's tree id, in a file beside the run: a read unpacks only the folders that changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from demo_run import demo_run
from test_readmodel import contribute

from gitswarm.memory.repo import Memory
from gitswarm.readmodel.folders import FILE, FORMAT
from gitswarm.readmodel.read import read_run


def kept(memory: Memory) -> dict:
    return json.loads((memory.path / FILE).read_bytes())["folders"]


def folder_id(memory: Memory, pid: str) -> str:
    return str(memory.repo.revparse_single(f"{memory.main()}:problems/{pid}").id)


def test_a_read_keeps_each_problem_folder_by_its_tree_and_reads_only_what_changed(memory: Memory):
    contribute(memory, "e1", "note", {"notes/n.md": "a note"})
    first = read_run(memory).problem("sum")
    assert kept(memory)[folder_id(memory, "sum")][0] == list(first.counts.as_dict().values())
    # Proof that a kept folder is not read again: an entry changed by hand is what the next read shows.
    entries = kept(memory)
    entries[folder_id(memory, "sum")][0][0] = 41
    (memory.path / FILE).write_text(json.dumps({"format": FORMAT, "folders": entries}))
    assert read_run(memory).problem("sum").counts.notes == 41
    # A new item gives the folder a new tree: read from git, and the file holds main's folders alone.
    contribute(memory, "e2", "attempt", {"attempts/a.md": "Answer: 7"})
    now = read_run(memory).problem("sum")
    assert (now.counts.notes, now.counts.attempts, now.state) == (1, 1, "candidate")
    assert set(kept(memory)) == {folder_id(memory, pid) for pid in memory.problems()}


@pytest.mark.parametrize("content", [b"", b"not json", b'{"format": "gitswarm-folders/0", "folders": {}}',
                                     b'{"format": "gitswarm-folders/1", "folders": {"abc": [1]}}', b"[1, 2]"])
def test_a_file_that_cannot_be_used_is_ignored_and_written_again(memory: Memory, content: bytes):
    contribute(memory, "e1", "attempt", {"attempts/a.md": "Answer: 7"})
    expected = read_run(memory).as_dict()
    (memory.path / FILE).write_bytes(content)
    assert read_run(memory).as_dict() == expected
    assert kept(memory)[folder_id(memory, "sum")][0] == [0, 0, 1, 0, 0]


def test_a_file_that_cannot_be_written_leaves_the_read_as_it_is(memory: Memory):
    contribute(memory, "e1", "note", {"notes/n.md": "a note"})
    expected = read_run(memory).as_dict()
    (memory.path / FILE).unlink()
    (memory.path / FILE).mkdir()  # the rename over it fails, as in a run folder this process may not write
    assert read_run(memory).as_dict() == expected
    assert (memory.path / FILE).is_dir() and not list(memory.path.glob(f".{FILE}.*"))  # no part file left


def test_a_run_with_selections_reads_the_same_from_the_kept_folders(tmp_path_factory: pytest.TempPathFactory,
                                                                     tmp_path: Path):
    run = tmp_path / "run"
    shutil.copytree(demo_run(tmp_path_factory), run)
    (run / FILE).unlink(missing_ok=True)
    from_git = read_run(Memory(run))
    assert any(p.selected for p in from_git.problems) and (run / FILE).exists()
    assert read_run(Memory(run)).as_dict() == from_git.as_dict()  # every folder from the file this time
