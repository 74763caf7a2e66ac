"""The `shell` tool of code workers: real run repositories of the shipped reproduce set, the
real Toolbox, the real sandbox and the reference built from its hidden source.

What it proves: the tool is offered to program and reproduce problems only; a command's
text changes become staged files and deletions within the memory's path and size rules,
build products stay on disk unstaged; the reference runs under its name but its bytes, its
source and the hidden tests cannot be read through any tool; a hanging or forking command is
contained and leaves nothing running; a reproduce code contribution needs compile.sh.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio
import pytest

from gitswarm.domain.index import MemoryIndex
from gitswarm.engine.config import SolveConfig
from gitswarm.engine.plan import Assignment, EpisodePlan, Role
from gitswarm.engine.references import References
from gitswarm.engine.runview import RunView
from gitswarm.engine.tools import Final, Toolbox, ToolError, tool_schemas
from gitswarm.memory import indexing
from gitswarm.memory.repo import Memory
from gitswarm.memory.store import Store
from gitswarm.models.textproto import instructions
from gitswarm.problems.loader import load_set
from gitswarm.problems.model import ProblemSet
from gitswarm.resources import resolve_set
from gitswarm.sandbox import containment

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason=(
    "only as root does the sandbox run commands as a fresh uid that is not the owner of the "
    "reference file; as the caller, a command may chmod and read it"))
SHIPPED = resolve_set("reproduce")


pytestmark = pytest.mark.skipif(containment().backend is None, reason=(
    "no sandbox backend on this machine (bubblewrap or namespaces): the shell cannot run"))


@pytest.fixture(scope="module")
def reproduce_set() -> ProblemSet:
    return load_set(SHIPPED)


class Episode:
    """A real Toolbox on one problem of a real run, with its own references folder."""

    def __init__(self, memory: Memory, problems: ProblemSet, problem: str, folder: Path | None,
                 episode: str = "e00001", review: Assignment | None = None) -> None:
        self.memory, self.problems = memory, problems
        found = problems.get(problem)
        index = MemoryIndex()
        indexing.update(index, memory.repo, memory.main())
        view = RunView(SolveConfig(problems=problems.path, run=memory.path, model="m"), [problem])
        ep = EpisodePlan(episode, "w01", problem, found.kind.value, found.title, memory.main(),
                         found.executable, role=Role.REVIEW if review else Role.WORKER, review=review,
                         image=found.image, reference_in_image=found.reference_in_image)
        limiter = anyio.CapacityLimiter(2)
        self.tools = Toolbox(Store(memory), index, view, ep, limiter,
                             References(problems, limiter, folder) if folder else None)

    def call(self, name: str, **args):
        return anyio.run(lambda: self.tools.call(name, args))

    def shell(self, command: str, **args) -> str:
        return self.call("shell", command=command, **args)

    def commit(self, final: Final) -> str:
        written = self.memory.contribute(final.contribution)
        self.memory.compose([self.tools.ep.episode])
        return written.commit


@pytest.fixture
def episodes():
    """Makes Episodes, and removes their code trees afterwards, whatever the test's outcome."""
    made: list[Episode] = []

    def make(*args, **kwargs) -> Episode:
        made.append(Episode(*args, **kwargs))
        return made[-1]

    yield make
    for episode in made:
        episode.tools.close()


@pytest.fixture
def tally(tmp_path: Path, reproduce_set: ProblemSet, episodes) -> Episode:
    memory = Memory.create(tmp_path / "run", reproduce_set, problem_ids=["tally"])
    return episodes(memory, reproduce_set, "tally", tmp_path / "references")


C_COUNTER = r'''#include <stdio.h>
int main(void) { int c, n = 0; while ((c = getchar()) != EOF) n += c == '\n'; printf("%d\n", n); return 0; }
'''


def test_the_shell_is_offered_to_code_problems_only(tmp_path: Path, problem_dir: Path, episodes) -> None:
    for kind in ("program", "reproduce"):
        names = [t["function"]["name"] for t in tool_schemas(kind)]
        assert "shell" in names and "run_python" in names
    for kind in ("proof", "answer"):
        assert "shell" not in [t["function"]["name"] for t in tool_schemas(kind)]
    assert "### shell\n" in instructions(tool_schemas("reproduce"))  # the text protocol shows it
    assert "shell" not in instructions(tool_schemas("proof"))
    proofs = load_set(problem_dir)
    episode = episodes(Memory.create(tmp_path / "run", proofs), proofs, "odd", tmp_path / "refs")
    with pytest.raises(ToolError, match="there is no tool 'shell'"):
        episode.shell("true")


def test_text_changes_are_staged_and_build_products_stay_on_disk(tally: Episode) -> None:
    script = f"mkdir -p count && cd count && cat > main.c <<'EOF'\n{C_COUNTER}EOF\n" \
             "printf 'cc -O2 -o executable main.c\\n' > compile.sh && sh compile.sh && printf 'a\\nb\\n' | ./executable"
    out = tally.shell(script)
    assert out.startswith("exit code 0") and "\n2\n" in out
    assert set(tally.tools.staged) == {"code/count/main.c", "code/count/compile.sh"}
    assert tally.tools.staged["code/count/main.c"] == C_COUNTER
    assert re.search(r"- code/count/executable: a build product \(compile.sh builds it\): not staged", out)
    again = tally.shell("printf 'x\\n' | count/executable && ls count")  # the build product persists
    assert again.startswith("exit code 0") and "executable" in again
    tally.call("write_file", path="code/count/NOTES.txt", content="written by write_file\n")
    assert "written by write_file" in tally.shell("cat count/NOTES.txt")
    tally.shell("rm count/NOTES.txt")
    assert "code/count/NOTES.txt" not in tally.tools.staged  # never committed: simply unstaged


def test_deletions_of_committed_files_are_committed(tally: Episode, tmp_path: Path, episodes) -> None:
    tally.shell("mkdir -p py && printf '#!/bin/sh\\ncp main.py executable\\n' > py/compile.sh && "
                "echo 'print(1)' > py/main.py && echo old > py/OLD.txt")
    first = tally.commit(tally.call("contribute", kind="code", title="start", summary="s"))
    later = episodes(tally.memory, tally.problems, "tally", tmp_path / "references", episode="e00002")
    out = later.shell("test -x py/compile.sh && cat py/OLD.txt && rm py/OLD.txt")
    assert "\nold\n" in out and "deleted (removed from the memory on contribute): code/py/OLD.txt" in out
    assert later.tools.staged_names() == ["code/py/OLD.txt (deleted)"]
    final = later.call("contribute", kind="code", title="drop OLD.txt", summary="s", informed_by=[first])
    commit = later.commit(final)
    assert later.memory.read_file("problems/tally/code/py/OLD.txt") is None
    assert later.memory.read_file("problems/tally/code/py/main.py") == b"print(1)\n"
    assert later.memory.commit(commit).trailers["Deleted"] == "code/py/OLD.txt"
    index = MemoryIndex()
    indexing.update(index, later.memory.repo, later.memory.main())
    assert "code/py/OLD.txt" not in index.problems["tally"].items


def test_a_review_never_changes_the_codebase_it_reviews(tally: Episode, tmp_path: Path, episodes) -> None:
    """A review's shell leaves what it builds, writes or removes in the candidate's folder in its
    tree, says so, and stages none of it: its contribution is its reviews/ files alone."""
    tally.shell("mkdir -p py && printf 'cp main.py executable\\n' > py/compile.sh && echo 'print(1)' > py/main.py "
                "&& echo old > py/OLD.txt")
    first = tally.commit(tally.call("contribute", kind="code", title="start", summary="s"))
    review = episodes(tally.memory, tally.problems, "tally", tmp_path / "references", episode="e00002",
                      review=Assignment("code/py", first))
    out = review.shell("cd py && sh compile.sh > build.log && rm OLD.txt && mkdir -p ../.scratch "
                       "&& echo t > ../.scratch/t.sh && ls")
    assert out.startswith("exit code 0") and "build.log" in out
    assert "nothing under code/ is staged" in out and "deleted (removed" not in out
    assert "- code/py/build.log: left in your tree, not committed" in out
    assert "- code/py/OLD.txt: removed from your tree only" in out
    assert review.tools.staged == {} and review.tools.deleted == set()
    assert "build.log" in review.shell("ls py")  # still there for its next commands
    review.call("write_file", path="reviews/py.md", content="It builds.\n\nVerdict: pass\n")
    done = review.commit(review.call("contribute", kind="review", title="py passes", summary="s",
                                     reviews="code/py", verdict="pass"))
    assert review.memory.commit(done).trailers.get("Deleted") is None
    assert review.memory.read_file("problems/tally/code/py/OLD.txt") == b"old\n"
    assert review.memory.read_file("problems/tally/code/py/build.log") is None


def test_syncing_the_tree_never_writes_or_deletes_through_a_link(tally: Episode, tmp_path: Path,
                                                                 episodes) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("main.c", "OLD.txt"):
        (outside / name).write_text("precious\n")
    tally.shell("mkdir -p c py && echo 'int main(void){return 0;}' > c/main.c && echo old > py/OLD.txt && "
                "echo 'cc -o executable main.c' > c/compile.sh && echo 'cp x executable' > py/compile.sh")
    tally.commit(tally.call("contribute", kind="code", title="t", summary="s"))
    later = episodes(tally.memory, tally.problems, "tally", tmp_path / "references", episode="e00002")
    later.call("write_file", path="code/c/main.c", content="int main(void){return 1;}\n")
    later.shell(f"rm -rf c py && ln -s {outside} c && ln -s {outside} py")  # links the engine would follow
    assert "code/py/OLD.txt" in later.tools.deleted
    later.call("write_file", path="code/c/main.c", content="int main(void){return 2;}\n")
    out = later.shell("cat c/main.c; test -L c || echo 'c is a folder again'")
    assert "return 2" in out and "c is a folder again" in out
    assert {p.name: p.read_text() for p in outside.iterdir()} == {"main.c": "precious\n", "OLD.txt": "precious\n"}


def test_staging_keeps_the_memory_path_and_size_rules(tally: Episode) -> None:
    limits = tally.memory.limits
    big = limits.max_file_bytes + 1
    many = limits.max_files + 30
    out = tally.shell(
        f"mkdir -p ok zz .cache && echo fine > ok/a.txt && echo x > 'ok/bad name.txt' && "
        f"head -c {big} /dev/zero | tr '\\0' a > ok/big.txt && printf 'a\\377b' > ok/latin1.txt && "
        f"ln -s /etc/passwd ok/link && echo c > .cache/x && echo t > ok/.tool-state && "
        f"for i in $(seq {many}); do echo $i > zz/f$i.txt; done")
    staged = tally.tools.staged
    assert "code/ok/a.txt" in staged
    assert len(staged) == limits.max_files
    reasons = dict(re.findall(r"^- (\S+(?: name\.txt)?): (.+)$", out, re.M))
    assert "letters, digits" in reasons["code/ok/bad name.txt"]
    assert f"the limit is {limits.max_file_bytes}" in reasons["code/ok/big.txt"]
    assert "not UTF-8" in reasons["code/ok/latin1.txt"]
    assert "symbolic link" in reasons["code/ok/link"]
    assert "dot" in reasons["code/.cache/"] and "dot" in reasons["code/ok/.tool-state"]
    assert "... and" in out and f"at most {limits.max_files} files" in out
    assert not any(p.startswith(("code/.cache", "code/ok/.tool")) for p in staged)


def test_a_code_contribution_to_a_reproduce_problem_needs_compile_sh(tally: Episode, episodes) -> None:
    tally.shell("mkdir -p c && echo 'int main(void){return 0;}' > c/main.c")
    with pytest.raises(ToolError, match=r"code/c/ has no compile.sh at its root"):
        tally.call("contribute", kind="code", title="t", summary="s")
    tally.call("write_file", path="code/loose.c", content="int x;\n")
    with pytest.raises(ToolError, match="lies loose in code/"):
        tally.call("contribute", kind="code", title="t", summary="s")
    tally.shell("rm ../loose.c 2>/dev/null; rm loose.c; echo 'cc -o executable main.c' > c/compile.sh")
    final = tally.call("contribute", kind="code", title="t", summary="s")
    assert set(final.contribution.files) == {"code/c/main.c", "code/c/compile.sh"}
    notes_only = episodes(tally.memory, tally.problems, "tally", tally.tools.references.root, "e00002")
    notes_only.call("write_file", path="notes/idea.md", content="idea\n")
    with pytest.raises(ToolError, match="nothing under code/ is staged"):
        notes_only.call("contribute", kind="code", title="t", summary="s")
    assert notes_only.call("contribute", kind="note", title="t", summary="s").action == "contribute"


def test_program_problems_need_no_compile_sh(tmp_path: Path, problem_dir: Path, episodes) -> None:
    programs = load_set(problem_dir)
    episode = episodes(Memory.create(tmp_path / "run", programs), programs, "rev", tmp_path / "refs")
    out = episode.shell("mkdir rev && printf 'def rev(s):\\n    return s[::-1]\\n' > rev/solution.py && "
                        "cd rev && python3 -c 'from solution import rev; print(rev(\"ab\"))'")
    assert "\nba\n" in out
    assert "--- stdout ---\nnone\n" in episode.shell("command -v tally || echo none")  # no reference
    assert episode.call("contribute", kind="code", title="t", summary="s").action == "contribute"


def test_the_reference_runs_under_its_name(tally: Episode) -> None:
    out = tally.shell("printf 'one two\\nthree\\n' | tally; echo \"exit $?\"; tally --version")
    assert "2 3 14\nexit 0\ntally 1.0\n" in out


def test_a_worker_without_the_hidden_parts_is_told_it_has_no_reference(tally: Episode, episodes) -> None:
    remote = episodes(tally.memory, tally.problems, "tally", None)  # as a remote worker's engine
    out = remote.shell("command -v tally || echo none")
    assert "note: this worker has no reference executable" in out and "--- stdout ---\nnone\n" in out


@needs_root
def test_the_reference_cannot_be_read_or_copied(tally: Episode) -> None:
    out = tally.shell('ref="$(command -v tally)"; ls -l "$ref"; cat "$ref" | head -c 4 | od -c; '
                      'cp "$ref" mine; chmod u+r "$ref"; ls "$(dirname "$ref")"; '
                      'sleep 5 | tally & sleep 0.3; pid=$(pgrep -n tally); '
                      'cp /proc/$pid/exe viaproc; head -c 4 /proc/$pid/mem; kill %1; true')
    assert "Permission denied" in out and "ELF" not in out
    # chmod: the file is not the command's (namespaces), or lies in a read-only bind (bwrap)
    assert "Operation not permitted" in out or "Read-only file system" in out
    assert not any(p.endswith(("mine", "viaproc")) for p in tally.tools.staged)
    tree = tally.tools.code.tree.root
    assert not (tree / "mine").exists() and not (tree / "viaproc").exists()


@needs_root
def test_ld_preload_does_not_reach_into_the_reference(tally: Episode) -> None:
    if containment().name == "bwrap":
        pytest.skip("under bwrap every bind is nosuid: the reference is not a secure execution, and a preloaded "
                    "library reaches into it (docs/problem-sets.md, the sandbox); as root the namespaces backend is "
                    "the default")
    lib = r'''#include <stdio.h>
__attribute__((constructor)) static void grab(void) { FILE *f = fopen("/tmp/grabbed", "w"); if (f) fclose(f); }
'''
    out = tally.shell(f"cat > grab.c <<'EOF'\n{lib}EOF\ncc -shared -fPIC -o grab.so grab.c && "
                      "LD_PRELOAD=$PWD/grab.so /bin/true && ls /tmp/grabbed && rm /tmp/grabbed && "
                      "echo x | LD_PRELOAD=$PWD/grab.so tally; ls /tmp/grabbed")
    assert out.count("/tmp/grabbed") >= 2 and "No such file" in out  # loaded into true, not tally
    assert "\n1 1 2\n" in out


def test_hidden_tests_reference_source_and_run_are_out_of_reach(tally: Episode) -> None:
    problem = tally.problems.get("tally")
    source = problem.reference_dir / "tally.c"
    suite = problem.tests_dir / "tests.json"
    test_file = next(problem.tests_dir.rglob("test_*.py"))
    secrets = [source.read_text()[:200], suite.read_text()[:200], test_file.read_text()[:200]]
    out = tally.shell(f"cat {source} {suite} {test_file}; ls {problem.path.parent}; "
                      f"cp -r {problem.tests_dir} stolen; ls {tally.memory.path}; "
                      f"grep -r def {problem.path.parent} | head")
    python = tally.call("run_python", code=(
        f"for p in [{str(source)!r}, {str(test_file)!r}, {str(suite)!r}]:\n"
        "    try:\n        print(open(p).read())\n    except OSError as e:\n        print('refused', e)"))
    assert python.count("refused") == 3
    for path in ("../../reference/tally.c", "../tally/tests/tests.json", str(source), "reference/tally.c"):
        with pytest.raises(ToolError):
            tally.call("read_file", path=path)
    for text in (out, python):
        assert not any(secret.strip()[:80] in text for secret in secrets)
    assert not any("stolen" in p for p in tally.tools.staged)


def test_a_hanging_or_forking_command_is_contained(tally: Episode) -> None:
    word = f"{os.getpid()}7919"
    escape = f"(setsid sleep {word} &); " if ROOT else ""  # as the caller, only the session is killed
    hang = tally.shell(f"{escape}sleep {word} & while :; do :; done", timeout=2)
    assert hang.startswith("timed out after 2 s")
    fork = tally.shell(f"for i in $(seq 400); do (sleep {word} &) 2>/dev/null; done; echo forked", timeout=5)
    assert "forked" in fork or "timed out" in fork
    assert _processes_with(word) == []


def _processes_with(word: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if word in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_the_code_tree_is_removed_when_the_episode_closes(tally: Episode) -> None:
    tally.shell("mkdir -p x && chmod 000 x")
    root = tally.tools.code.tree.root
    assert root.is_dir()
    tally.tools.close()
    assert not root.exists()
