"""A ref folder never vanishes under a writer creating a ref in it.

libgit2 makes a ref's folder, then opens `<ref>.lock` in it; a merger deleting the folder's last
branch removes the folder when it is left empty. When that removal falls between the two calls,
the write fails with "failed to create locked file ... No such file or directory" (seen once in
`test_two_racing_mergers_lose_no_update` under load). Here the removal is put exactly there, every
time: a small C library preloaded into a writer process runs `rmdir` on the folder just before
each `open` of a ref's lock file, which is what the racing merger's pruning does (it removes a
folder only when it is empty), and what `git pack-refs` does to every folder whose loose refs it
packed (the op refs' and the notes' too: seen in the chaos test beside `git gc` loops).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pygit2
import pytest

from gitswarm.memory import refdirs
from gitswarm.memory.repo import Memory

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

/* Before a ref's lock file is created, remove its folder if it is empty: what a merger
   deleting the folder's last branch, or a packer its last loose ref, does at the worst moment. */
static void prune(const char *path, int flags) {
    size_t n = strlen(path);
    if (!(flags & O_EXCL) || n < 5 || strcmp(path + n - 5, ".lock") || !strstr(path, "/refs/"))
        return;
    char folder[4096];
    strncpy(folder, path, sizeof folder - 1);
    folder[sizeof folder - 1] = 0;
    rmdir(dirname(folder));
}

#define WRAP(name) \
int name(const char *path, int flags, ...) { \
    static int (*real)(const char *, int, ...); \
    if (!real) real = dlsym(RTLD_NEXT, #name); \
    va_list ap; va_start(ap, flags); int mode = va_arg(ap, int); va_end(ap); \
    prune(path, flags); \
    return real(path, flags, mode); \
}
WRAP(open)
WRAP(open64)
"""

WRITE_RAW = """
import sys, pygit2
repo = pygit2.Repository(sys.argv[1])
main = repo.references["refs/heads/main"].target
with repo.transaction() as txn:
    txn.lock_ref("refs/heads/swarm/e00-001")
    txn.set_target("refs/heads/swarm/e00-001", main, message="raw")
"""

WRITE_MEMORY = """
import sys
from pathlib import Path
from gitswarm.domain.contribution import Contribution
from gitswarm.memory.repo import Memory
memory = Memory(Path(sys.argv[1]))
for i in range(3):
    memory.contribute(Contribution(problem="sum", episode=f"e00-{i:03d}", worker="w00", kind="note",
        title="note", files={f"notes/{i}.md": "x\\n"}, parent=memory.main(), op=f"e00-{i:03d}-c"))
    memory.compose()  # deletes the branch: the folder would be left empty
print(len(memory.items("sum", "note")))
"""


@pytest.fixture(scope="module")
def pruning_shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or not sys.platform.startswith("linux"):
        pytest.skip("needs a C compiler on Linux to build the preloaded library that removes the folder")
    folder = tmp_path_factory.mktemp("shim")
    (folder / "prune.c").write_text(SHIM)
    subprocess.run([compiler, "-shared", "-fPIC", "-o", folder / "prune.so", folder / "prune.c", "-ldl"],
                   check=True, capture_output=True)
    return folder / "prune.so"


def run_preloaded(shim: Path, script: str, repo: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LD_PRELOAD": str(shim)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), str(repo)], env=env,
                          capture_output=True, text=True, timeout=60)


def test_the_race_reproduced_without_the_kept_folder(memory: Memory, pruning_shim: Path):
    """The shim does reproduce the failure: a folder with nothing else in it is gone at the open."""
    shutil.rmtree(memory.path / "refs/heads/swarm", ignore_errors=True)
    done = run_preloaded(pruning_shim, WRITE_RAW, memory.path)
    assert done.returncode != 0
    assert "failed to create locked file" in done.stderr and "No such file or directory" in done.stderr


def test_a_writer_beside_a_pruning_merger_always_gets_its_folder(memory: Memory, pruning_shim: Path):
    done = run_preloaded(pruning_shim, WRITE_MEMORY, memory.path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3"]
    assert (memory.path / "refs/heads/swarm" / refdirs.KEEP).is_dir()


def test_the_kept_folder_is_no_ref_to_git_or_libgit2(memory: Memory):
    assert (memory.path / "refs/heads/swarm" / refdirs.KEEP).is_dir()
    assert memory.pending() == {}
    assert [r for r in memory.repo.listall_references() if r.startswith("refs/heads/")] == ["refs/heads/main"]
    listed = subprocess.run(["git", "-C", str(memory.path), "for-each-ref", "refs/heads/"],
                            check=True, capture_output=True, text=True).stdout
    assert listed.split()[-1] == "refs/heads/main" and len(listed.splitlines()) == 1
    memory.repo.references.compress()
    assert (memory.path / "refs/heads/swarm" / refdirs.KEEP).is_dir()
    assert isinstance(memory.repo.references["refs/heads/main"].peel(pygit2.Commit), pygit2.Commit)


WRITE_AFTER_GC = """
import sys
from pathlib import Path
from gitswarm.domain.contribution import Contribution
from gitswarm.memory.repo import Memory
memory = Memory(Path(sys.argv[1]))
memory.contribute(Contribution(problem="sum", episode="e01-000", worker="w01", kind="note", title="note",
    files={"notes/after.md": "x\\n"}, parent=memory.main(), op="e01-000-c"))
memory.add_transcript(memory.op_commit("e01-000-c"), "the transcript")
print(memory.op_commit("e01-000-c"))
"""


def test_an_op_ref_and_a_note_written_after_git_gc_packed_them_all(memory: Memory, pruning_shim: Path):
    """`git pack-refs --all` packs every op ref and note ref and removes their folders when left
    empty; the kept folders stay, so the next op ref and note find theirs."""
    WRITE = WRITE_AFTER_GC.replace("e01-000", "e00-000").replace("after.md", "before.md")
    assert run_preloaded(pruning_shim, WRITE, memory.path).returncode == 0
    subprocess.run(["git", "-C", str(memory.path), "pack-refs", "--all"], check=True)
    for folder in ("refs/gitswarm/ops", "refs/notes"):
        assert not [p for p in (memory.path / folder).iterdir() if p.name != refdirs.KEEP]  # all packed
        assert (memory.path / folder / refdirs.KEEP).is_dir()
    done = run_preloaded(pruning_shim, WRITE_AFTER_GC, memory.path)
    assert done.returncode == 0, done.stderr
    assert Memory(memory.path).transcript(done.stdout.strip()) == "the transcript"


def test_the_op_ref_race_reproduced_without_the_kept_folder(memory: Memory, pruning_shim: Path):
    subprocess.run(["git", "-C", str(memory.path), "pack-refs", "--all"], check=True)
    shutil.rmtree(memory.path / "refs/gitswarm/ops")
    done = run_preloaded(pruning_shim, WRITE_RAW.replace("refs/heads/swarm/e00-001", "refs/gitswarm/ops/x-c"),
                         memory.path)
    assert done.returncode != 0
    assert "failed to create locked file" in done.stderr and "No such file or directory" in done.stderr
