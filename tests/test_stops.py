"""Stop reasons: a named type, and exit codes from one table, never from a message's words."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitswarm.cli.common import STOP_EXIT, Exit
from gitswarm.cli.running import run_swarm
from gitswarm.cli.solve import _config
from gitswarm.core.stops import Stop, StopReason
from gitswarm.fakeserver import FakeError, FakeReply
from gitswarm.problems.loader import load_set


def test_every_reason_has_its_exit_code():
    assert set(STOP_EXIT) == set(StopReason)
    ok = {StopReason.BUDGET, StopReason.EPISODE_CAP, StopReason.SETTLED, StopReason.TOKEN_CAP,
          StopReason.USD_CAP, StopReason.TIME_LIMIT}
    assert {r for r, code in STOP_EXIT.items() if code == Exit.OK} == ok
    assert {r for r, code in STOP_EXIT.items() if code == Exit.FAILED} == {
        StopReason.NO_PROGRESS, StopReason.PROVIDER_FAILING, StopReason.ENGINE_ERRORS, StopReason.MODEL_FATAL,
        StopReason.REMOTE_MOVED, StopReason.NO_WORKERS}
    assert STOP_EXIT[StopReason.USER] == Exit.INTERRUPTED == 130


def test_a_stop_carries_its_reason_and_message():
    stop = Stop(StopReason.TOKEN_CAP, "token cap of 10 reached")
    assert str(stop) == "token cap of 10 reached"
    assert stop.as_event() == {"reason": "token_cap", "detail": "token cap of 10 reached"}


def _abstain(request: dict) -> FakeReply:
    return FakeReply(tool_calls=[{"name": "abstain", "arguments": {"reason": "no idea"}}])


def _refuse_the_key(request: dict) -> FakeError:
    return FakeError(401, "Incorrect API key provided", "invalid_request_error", "invalid_api_key")


@pytest.mark.parametrize(("responder", "options", "code", "said"), [
    (_abstain, {"budget": 1, "max_episodes": 2}, Exit.OK, "episode cap of 2 reached"),
    (_refuse_the_key, {"budget": 4}, Exit.FAILED, "gitswarm: the run stopped: model call failed (auth)"),
], ids=["episode cap", "fatal model error"])
def test_the_exit_code_comes_from_the_reason(responder, options, code, said, problem_dir: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture):
    problem_set = load_set(problem_dir)
    cfg = _config(problem_set, "openai/gitswarm-fake", tmp_path / "run", workers=1, verify=0, api_key="k", **options)
    assert run_swarm(cfg, problem_set, as_json=False, responder=responder) == code
    shown = capsys.readouterr()
    assert said in shown.out + shown.err


def test_a_failed_run_says_why_once(problem_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture):
    """The stop line and the summary name the reason; its paragraph is printed once, last, on stderr."""
    problem_set = load_set(problem_dir)
    cfg = _config(problem_set, "openai/gitswarm-fake", tmp_path / "run", workers=1, verify=0, api_key="k", budget=4)
    assert run_swarm(cfg, problem_set, as_json=False, responder=_refuse_the_key) == Exit.FAILED
    shown = capsys.readouterr()
    stops = [line for line in shown.out.splitlines() if line.lower().startswith("stopped (model_fatal)")]
    assert len(stops) == 2 and not any("Incorrect API key" in line for line in stops)  # stop line, summary
    assert shown.err.count("Incorrect API key provided") == 1  # the run's why, once, last
    assert shown.err.rstrip().endswith("What was committed is kept.")


def test_the_readme_names_every_reason():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    start = readme.index("## Exit codes")
    section = readme[start:readme.index("\n## ", start)]
    assert all(f"`{reason.value}`" in section for reason in StopReason)
