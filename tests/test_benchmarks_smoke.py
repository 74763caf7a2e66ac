"""Every benchmark and measurement script in scripts/ runs once at its smallest size, as a
process of its own, so none can break unseen (issue 34): it must exit 0 and print its figures.
No timing is asserted: a figure at this size means nothing, docs/benchmarks.md gives the
commands whose figures do. What a script needs (a sandbox, a git daemon, a model server, a run
to read) is made here on 127.0.0.1, or the run is skipped saying why."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from container_fixture import engine_here
from local_model import require_local_model

from gitswarm.remote.daemon import daemon_path
from gitswarm.sandbox import containment

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
OLD_SANDBOX = "08ce2cf"
"""The commit bench_sandbox.py loads the old sandbox from (its `--old` default)."""


@dataclass(frozen=True)
class Smoke:
    """One script's smallest run: its arguments (`{run}` and `{api_base}` filled in here), a
    piece of the figures it prints, and what it needs beyond Python and git."""

    script: str
    args: tuple[str, ...]
    prints: str
    needs: str = ""


SMOKES = {
    "bench": Smoke("bench.py", ("--sizes", "3", "--latency", "0.05", "--per-worker", "2", "--commits", "100",
                                "--context", "10", "--rounds", "2"), "context: first-call prompt tokens"),
    "bench_cache": Smoke("bench_cache.py", ("--workers", "3", "--budget", "4"), "cost recorded USD"),
    "bench_container": Smoke("bench_container.py", ("--repeat", "1"), "container / namespaces", needs="container"),
    "bench_context": Smoke("bench_context.py", ("10",), '"tokens":'),
    "bench_dashboard": Smoke("bench_dashboard.py", ("--commits", "200", "--workers", "8", "--batch", "50"),
                             "app frame per event"),
    "bench_export": Smoke("bench_export.py", ("--episodes", "12", "--problems", "2", "--workers", "3",
                                              "--rounds", "1"), "episodes/s"),
    "bench_gitthread": Smoke("bench_gitthread.py", ("--calls", "200", "--waiting", "8"), "Memory.main (a ref read)"),
    "bench_grading": Smoke("bench_grading.py", ("--tests", "2", "--repeat", "1"), "ratio graded / direct",
                           needs="sandbox"),
    "bench_litellm": Smoke("bench_litellm.py", ("--calls", "8", "--c", "2", "--repeat", "1",
                                                "--only", "openai SDK"), "openai SDK alone"),
    "bench_local": Smoke("bench_local.py", ("--api-base", "{api_base}", "--workers", "1", "--episodes", "1",
                                            "--max-steps", "2", "--reply-timeout", "30"),
                         "valid native tool calls per 100 calls", needs="model server"),
    "bench_looks": Smoke("bench_looks.py", ("--claims", "20", "--moved", "4", "--repeat", "1"), "nothing moved"),
    "bench_memory": Smoke("bench_memory.py", ("--commits", "20", "--tree-files", "50"), "Memory.contribute"),
    "bench_packing": Smoke("bench_packing.py", ("--commits", "40", "--more", "8", "--rounds", "1"), "packed / loose"),
    "bench_path": Smoke("bench_path.py", ("--list",), '"exit": 0, "merged": true'),
    "bench_refnames": Smoke("bench_refnames.py", ("--episodes", "50", "--claims", "8", "--repeat", "2"),
                            "claims (every step)"),
    "bench_remote": Smoke("bench_remote.py", ("--episodes", "4", "--batch", "2", "--rounds", "1",
                                              "--preload", "50"), "plain git push of one ref", needs="git daemon"),
    "bench_remote_run": Smoke("bench_remote_run.py", ("3", "--latency", "0.05", "--per-worker", "2"),
                              '"calls_per_s":'),
    "bench_scale": Smoke("bench_scale.py", ("--problems", "2", "--per-problem", "4", "--workers", "4",
                                            "--latency", "0.02", "--window", "3", "--split", "2"),
                         "split over 2 worker processes on a git remote"),
    "bench_sandbox": Smoke("bench_sandbox.py", ("--repeat", "1"), "x1.00 of old", needs="sandbox"),
    "bench_window": Smoke("bench_window.py", ("--steps", "20", "--kb", "8"), "total input tokens, policy on"),
    "bench_status": Smoke("bench_status.py", ("--episodes", "12", "--problems", "2", "--workers", "3",
                                              "--rounds", "1"), "kept index: the engine's write, lock held"),
    "chaos": Smoke("chaos.py", ("kill", "flaky", "gitgc", "hidden", "hostile", "--kills", "1", "--budget", "8",
                                "--workers", "4", "--sets", "demo", "--big-mb", "1", "--many-files", "100"),
                   "kill: PASS  flaky: PASS  gitgc: PASS  hidden: PASS  hostile: PASS"),
    "episode_kinds": Smoke("episode_kinds.py", ("{run}",), "by kind", needs="a run"),
}
NOT_MEASUREMENTS = {
    "bench_history.py": "a library: the synthetic runs of bench.py, bench_context.py and chaos.py",
    "bench_orchestration.py": "bench.py runs its serve, engine and bare modes",
    "build_task_image.py": "builds the container tests' task image (tests/container_fixture.py runs it)",
    "docs_site.py": "the docs site's hooks, which `mkdocs build --strict` runs in CI",
    "relay.py": "a server whose replies a person writes, not a measurement",
}


def test_every_script_has_a_smoke_run_or_a_reason():
    scripts = {path.name for path in SCRIPTS.glob("*.py")}
    smoked = {smoke.script for smoke in SMOKES.values()}
    assert scripts - smoked - NOT_MEASUREMENTS.keys() == set(), "a script in scripts/ that no smoke run runs"
    assert (smoked | NOT_MEASUREMENTS.keys()) - scripts == set(), "a smoke run of a script that is gone"


def _fill(smoke: Smoke, request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """The arguments, with what the script needs made or found; skips when it cannot be."""
    if smoke.needs == "sandbox" and containment().backend is None:
        pytest.skip(f"{smoke.script} needs a sandbox backend: {containment().refused}")
    if smoke.needs == "container":
        engine_here()  # skips without a container engine (fails under CI)
    if smoke.needs == "git daemon" and daemon_path() is None:
        pytest.skip(f"{smoke.script} needs git daemon (no git-daemon under `git --exec-path`)")
    if smoke.script == "bench_sandbox.py" and subprocess.run(
            ["git", "-C", str(ROOT), "cat-file", "-e", f"{OLD_SANDBOX}^{{commit}}"], capture_output=True).returncode:
        pytest.skip(f"bench_sandbox.py loads the old sandbox from {OLD_SANDBOX}, not in this clone (shallow?)")
    filled = {}
    if smoke.needs == "model server":
        filled["api_base"] = request.getfixturevalue("model_server")
    if smoke.needs == "a run":
        filled["run"] = str(tmp_path / "demo")
        made = subprocess.run([sys.executable, "-m", "gitswarm", "demo", "--run", filled["run"], "--no-tui"],
                              capture_output=True, text=True, timeout=300, env=_env())
        assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    return [arg.format(**filled) for arg in smoke.args]


def _env() -> dict[str, str]:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def run_script(script: str, args: list[str], cwd: Path, timeout_s: float = 600) -> str:
    """The script as a user runs it, from a scratch folder (nothing it leaves lands in the clone):
    what it printed, once it has exited 0."""
    done = subprocess.run([sys.executable, str(SCRIPTS / script), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout_s, env=_env())
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMOKES))
def test_each_script_runs_at_its_smallest_size(name: str, request: pytest.FixtureRequest, tmp_path: Path):
    smoke = SMOKES[name]
    printed = run_script(smoke.script, _fill(smoke, request, tmp_path), tmp_path)
    assert smoke.prints in printed, f"{smoke.script} did not print {smoke.prints!r}:\n{printed[-3000:]}"


@pytest.mark.local_model
def test_bench_local_runs_against_the_real_small_model(tmp_path: Path):
    """bench_local.py as documented: it starts llama-cpp-python's server itself."""
    require_local_model()
    printed = run_script("bench_local.py", ["--workers", "1", "--episodes", "1", "--max-steps", "2"], tmp_path, 900)
    assert "prompt tokens reused from the server's cache" in printed
