"""A `git gc` beside a run loses no ref update.

libgit2 deletes a packed ref by writing packed-refs back from a copy it read before it took
packed-refs.lock; a `git pack-refs` that committed in between (it had moved the ledger's new
value from its loose file into packed-refs and removed the loose file) was undone, and the
ledger went back one write. The merger now deletes its branches while it holds git's
packed-refs.lock, so none of them can be packed meanwhile, or through git itself when one
already is (`memory.gitrefs`). Real repositories and the real git; the chaos test runs the
same thing against `git gc --auto` and `pack-refs` in loops."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import fsck_clean, git

from gitswarm.domain.contribution import Contribution
from gitswarm.engine.runlock import clear_stale_locks
from gitswarm.memory import gitrefs, refdirs
from gitswarm.memory.errors import Contention
from gitswarm.memory.repo import Memory

LEDGER = "refs/gitswarm/ledger"


def contribute(memory: Memory, episode: str) -> None:
    memory.contribute(Contribution(problem="sum", episode=episode, worker="w01", kind="note", title=episode,
                                   files={f"notes/{episode}.md": f"{episode}\n"}, parent=memory.main(),
                                   op=f"{episode}-c"))


def packed_names(run: Path) -> set[str]:
    text = (run / "packed-refs").read_text() if (run / "packed-refs").exists() else ""
    return {line.split()[1] for line in text.splitlines() if line and line[0] not in "#^"}


def test_a_merge_deletes_branches_git_gc_packed_and_keeps_the_ledgers_last_write(memory: Memory):
    run = memory.path
    contribute(memory, "e1")
    contribute(memory, "e2")
    memory.put_records("ledger", {"episodes/e1.json": {"status": "contribute"}}, "ledger: e1")
    git(run, "pack-refs", "--all")  # a user's `git gc`: the branches and the ledger packed, their loose files gone
    assert {"refs/heads/swarm/e1", "refs/heads/swarm/e2", LEDGER} <= packed_names(run)
    memory.put_records("ledger", {"episodes/e2.json": {"status": "contribute"}}, "ledger: e2")  # loose again
    last = git(run, "rev-parse", LEDGER).strip()
    composed = memory.compose()
    assert composed.merged == ["e1", "e2"]
    assert memory.pending() == {} and not {"refs/heads/swarm/e1", "refs/heads/swarm/e2"} & packed_names(run)
    assert git(run, "rev-parse", LEDGER).strip() == last
    assert git(run, "rev-parse", "main").strip() == composed.commit
    contribute(memory, "e3")  # loose again: the merger's own path (libgit2, under the lock)
    assert memory.compose().merged == ["e3"] and memory.pending() == {}
    assert not (run / "packed-refs.lock").exists() and fsck_clean(run)


def test_a_packer_committing_inside_the_merge_is_not_undone(memory: Memory):
    """The race, made deterministic. libgit2 knows packed-refs changed by its mtime, size and
    inode; a packer's commit it cannot see (rewritten in place, the same stamp) stands for
    one that lands between libgit2's read of packed-refs and its lock. libgit2 deleting the
    packed branch wrote the ledger's old value back; git, reading under the lock, does not."""
    run = memory.path
    contribute(memory, "e0")
    contribute(memory, "e1")
    memory.put_records("ledger", {"episodes/e1.json": {"status": "running"}}, "ledger: e1 running")
    git(run, "pack-refs", "--all")
    assert memory.compose(["e0"]).merged == ["e0"]  # a packed branch deleted: packed-refs read (the ledger's v1)
    v1 = git(run, "rev-parse", LEDGER).strip()
    memory.put_records("ledger", {"episodes/e1.json": {"status": "contribute"}}, "ledger: e1 contribute")
    v2 = git(run, "rev-parse", LEDGER).strip()
    packed, stamp = run / "packed-refs", (run / "packed-refs").stat()
    with packed.open("r+") as file:  # the packer: v2 into packed-refs, then its loose file pruned
        text = file.read()
        file.seek(0)
        file.write(text.replace(f"{v1} {LEDGER}", f"{v2} {LEDGER}"))
    os.utime(packed, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    (run / LEDGER).unlink()
    assert git(run, "rev-parse", LEDGER).strip() == v2
    assert memory.compose().merged == ["e1"]
    assert git(run, "rev-parse", LEDGER).strip() == v2, "the ledger's last write was undone"
    assert memory.records("ledger")["episodes/e1.json"] == {"status": "contribute"}


def test_no_packer_commits_while_the_merger_holds_packed_refs_lock(memory: Memory):
    run = memory.path
    contribute(memory, "e1")
    with gitrefs.packed_locked(memory.repo):
        packer = subprocess.run(["git", "-C", str(run), "-c", "core.packedRefsTimeout=0", "pack-refs", "--all"],
                                capture_output=True, text=True, check=False)
        assert packer.returncode != 0 and "packed-refs.lock" in packer.stderr, packer
        assert "refs/heads/swarm/e1" not in packed_names(run)
        with pytest.raises(Contention, match="held by another writer"):
            with gitrefs.packed_locked(memory.repo):
                pass
    git(run, "pack-refs", "--all")  # released: git packs again
    assert "refs/heads/swarm/e1" in packed_names(run)


def test_a_packed_refs_lock_left_by_a_dead_writer_is_taken_over(memory: Memory):
    lock = memory.path / "packed-refs.lock"
    lock.touch()
    old = time.time() - gitrefs.STALE_S - 5
    os.utime(lock, (old, old))
    with pytest.raises(Contention, match="died"):  # removed; the caller's retry takes it next
        with gitrefs.packed_locked(memory.repo):
            pass
    contribute(memory, "e1")
    assert memory.compose().merged == ["e1"] and not lock.exists()


def test_git_refusing_a_transaction_for_another_reason_is_a_fault_not_a_retry(memory: Memory):
    with pytest.raises(gitrefs.RefChangeFailed, match="update-ref"):
        gitrefs.transact(memory.repo, [gitrefs.RefChange("refs/heads/bad..name", None)], "test")
    with pytest.raises(Contention, match="cannot lock ref"):
        gitrefs.transact(memory.repo, [gitrefs.RefChange("refs/heads/main", None, "1" * 40)], "test")



def loose_ops(run: Path) -> list[str]:
    folder = run / "refs" / "gitswarm" / "ops"
    return sorted(p.name for p in folder.iterdir() if p.name != refdirs.KEEP) if folder.exists() else []


@pytest.mark.slow  # 10,000 refs written and packed: 5-10 s of disk
def test_a_packing_git_cannot_finish_in_time_is_put_off(memory: Memory,
                                                                           monkeypatch: pytest.MonkeyPatch):
    """A packing is a run's last step and nothing depends on it: one git cannot finish in time
    (at 19,000 episodes it read each loose ref's object out of the page cache for minutes) is
    stopped by SIGTERM, leaves every ref as it was and is put off; the next one packs. git
    removes packed-refs.lock on SIGTERM, but a loose ref's lock it was pruning may stay: the
    next run's start clears those (`clear_stale_locks`), as it does after a crash. (10,000
    loose refs take git about a second to pack, so at 0.2 s it is past its start.)"""
    run, main = memory.path, memory.main()
    lines = "".join(f"create refs/gitswarm/ops/x{i} {main}\n" for i in range(10_000))
    subprocess.run(["git", "--git-dir", str(run), "update-ref", "--stdin"], input=lines, text=True, check=True)
    before = git(run, "for-each-ref", "--format=%(refname) %(objectname)")
    monkeypatch.setattr(gitrefs, "TIMEOUT_S", 0.2)
    assert memory.pack_refs() is False
    assert not (run / "packed-refs.lock").exists()
    assert git(run, "for-each-ref", "--format=%(refname) %(objectname)") == before
    clear_stale_locks(run, min_age_s=0)
    assert not list(run.rglob("*.lock"))
    monkeypatch.setattr(gitrefs, "TIMEOUT_S", 120)
    assert memory.pack_refs() is True
    assert loose_ops(run) == [] and git(run, "for-each-ref", "--format=%(refname) %(objectname)") == before
    assert fsck_clean(run)


@pytest.mark.slow  # 10,000 refs written and packed: 5-10 s of disk
def test_a_git_that_cannot_finish_in_time_is_stopped(memory: Memory,
                                                                         monkeypatch: pytest.MonkeyPatch):
    """Stopped at its timeout by SIGTERM, git has changed no ref: the transaction is a fault
    (the run stops), the next run's start clears any lock it left, and the next transaction
    goes through. (10,000 refs take git about a second: at 0.1 s it is past its start.)"""
    run, main = memory.path, memory.main()
    before = git(run, "for-each-ref", "--format=%(refname) %(objectname)")
    many = [gitrefs.RefChange(f"refs/gitswarm/ops/x{i}", main) for i in range(10_000)]
    monkeypatch.setattr(gitrefs, "TIMEOUT_S", 0.1)
    with pytest.raises(gitrefs.GitTimedOut, match=r"did not finish in 0\.1 s"):
        gitrefs.transact(memory.repo, many, "test")
    assert git(run, "for-each-ref", "--format=%(refname) %(objectname)") == before  # all or none
    clear_stale_locks(run, min_age_s=0)
    assert not list(run.rglob("*.lock"))
    monkeypatch.setattr(gitrefs, "TIMEOUT_S", 120)
    gitrefs.transact(memory.repo, many, "test")
    assert memory.repo.references["refs/gitswarm/ops/x9999"].target == memory.repo.references["refs/heads/main"].target
    assert fsck_clean(run)
