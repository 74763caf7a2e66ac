"""An experiment's spec: a TOML file naming the problems, the model, the arms, the budget held
equal and the seeds. Read once and checked whole: every arm × seed becomes a `SolveConfig`
before anything runs, so a defect is one message naming the file and the key, and nothing
has started."""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from gitswarm.demo.solver import SOLVER_MODEL, SolverSettings
from gitswarm.engine.config import GradeConfig, SolveConfig
from gitswarm.errors import BadInput
from gitswarm.experiment.budget import SMALLEST, Budget, EqualSpend
from gitswarm.experiment.remote import RemoteArms, remote_arms
from gitswarm.problems.model import ProblemSet

KEYS = ("name", "problems", "seeds", "baseline", "budget", "solve", "scripted", "grade", "arms", "remote")
"""The spec's top-level keys."""
HELD = ("budget", "max_episodes", "max_total_tokens")
"""Settings the spec's [budget] sets for every arm alike: an arm or [solve] may not."""
PER_RUN = ("problems", "run", "seed")
"""Settings the experiment gives each run itself."""
SOLVER_LITELLM = f"openai/{SOLVER_MODEL}"
"""The scripted solver as litellm reaches it: an OpenAI-compatible fake server."""
SOLVER_KEY = "scripted-solver-not-secret"
ARM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class SpecError(BadInput):
    """A defect of a spec: one paragraph naming the file and the key (bad input, exit 2)."""


@dataclass(frozen=True)
class RunPlan:
    """One arm × seed: an ordinary run with its own repository."""

    arm: str
    seed: int
    config: SolveConfig
    cap: int | None = None
    """Of an equal-spend run (pass 2), T: the token cap it runs under; None in pass 1."""

    @property
    def name(self) -> str:
        return f"{self.arm}-s{self.seed}" + (f"-at-{self.cap}" if self.cap is not None else "")

    def capped(self, tokens: int) -> RunPlan:
        """This pass-1 run's equal-spend run: the same settings under a cap of `tokens`, in a
        folder of its own beside it."""
        again = RunPlan(self.arm, self.seed, self.config, tokens)
        config = self.config.model_copy(update={"max_total_tokens": tokens,
                                                "run": self.config.run.with_name(again.name)})
        return RunPlan(self.arm, self.seed, config, tokens)

    def settings(self) -> dict:
        """Its settings as experiment.json records them (never the API key)."""
        return self.config.model_dump(mode="json", exclude={"api_key"})


@dataclass(frozen=True)
class Spec:
    """A checked spec and the runs it asks for, in the experiment's folder."""

    path: Path
    name: str
    problem_set: ProblemSet
    seeds: tuple[int, ...]
    baseline: str
    budget: Budget
    arms: dict[str, dict]
    scripted: SolverSettings | None
    """The scripted solver's chances when the model is `scripted-solver`, else None."""
    grade: GradeConfig
    folder: Path
    runs: tuple[RunPlan, ...]
    """Every arm × seed, seed by seed; under equal tokens, pass 1."""
    remote: RemoteArms | None = None
    """With `[remote]`, each run is a coordinated run on a git remote (`experiment/remote.py`)."""

    def again(self, fair: EqualSpend) -> list[RunPlan]:
        """The equal-spend runs (pass 2) of `fair`'s seed: one per arm that spent more than T."""
        return [p.capped(fair.tokens) for p in self.runs if p.seed == fair.seed and p.arm in fair.again]

    def standing(self, fair: EqualSpend) -> dict[str, str]:
        """Which run stands for each arm in `fair`'s seed: its equal-spend run, or its pass-1 run
        when it spent no more than T."""
        again = {p.arm: p.name for p in self.again(fair)}
        return {p.arm: again.get(p.arm, p.name) for p in self.runs if p.seed == fair.seed}


def load_spec(path: Path, out: Path | None = None) -> Spec:
    """Read and check the spec at `path`; the experiment's folder is `out`, default
    `experiments/<name>/`. Raises SpecError."""
    data = _toml(path)
    _known(path, "the spec", data, KEYS)
    name = _text(path, data, "name", path.stem)
    folder = out or Path("experiments") / name
    problem_set = _problems(path, data)
    arms = _arms(path, data.get("arms"))
    seeds = _seeds(path, data.get("seeds", [0]))
    baseline = _text(path, data, "baseline", next(iter(arms)))
    if baseline not in arms:
        raise SpecError(f"{path}: baseline = {baseline!r} is not an arm; the arms are {', '.join(arms)}")
    budget = _budget(path, data.get("budget"))
    base, scripted = _solve(path, data)
    grade = _grade(path)
    remote = remote_arms(path, data.get("remote"))
    runs = tuple(RunPlan(arm, seed, _config(path, problem_set, folder / "runs" / f"{arm}-s{seed}", arm,
                                            base, overrides | budget.settings() | {"seed": seed}))
                 for seed in seeds for arm, overrides in arms.items())  # seed by seed: pairs complete early
    return Spec(path, name, problem_set, seeds, baseline, budget, arms, scripted, grade, folder, runs, remote)


def _toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{path}: no such spec file; give the path of an experiment's TOML spec") from None
    except UnicodeDecodeError:
        raise SpecError(f"{path}: not UTF-8 text; save the spec as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: invalid TOML: {exc}") from None


def _known(path: Path, where: str, table: dict, known: tuple[str, ...] | set[str]) -> None:
    for key in table:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(sorted(known))}"
            raise SpecError(f"{path}: unknown key {key!r} in {where}; {hint}")


def _text(path: Path, data: dict, key: str, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or not ARM_NAME.match(value):
        raise SpecError(f"{path}: {key} must be a name of letters, digits, '.', '_' or '-', not {value!r}")
    return value


def _problems(path: Path, data: dict) -> ProblemSet:
    from gitswarm.problems.loader import ProblemSetError, load_set
    from gitswarm.resources import resolve_set

    given = data.get("problems")
    if not isinstance(given, str) or not given:
        raise SpecError(f"{path}: problems must name the problem set: a folder (relative to the spec) or a "
                        "shipped set's name, e.g. problems = \"answers\"")
    beside = path.parent / given
    folder = beside if beside.is_dir() else resolve_set(given)
    try:
        return load_set(folder.resolve())
    except ProblemSetError as exc:
        raise SpecError(f"{path}: problems = {given!r}: {exc.defects[0]} (`gitswarm problems check "
                        f"{folder}` lists every defect)") from None
    except (FileNotFoundError, NotADirectoryError):
        raise SpecError(f"{path}: problems = {given!r}: no such problem set (neither a folder beside the "
                        "spec nor a shipped set)") from None


def _arms(path: Path, arms: object) -> dict[str, dict]:
    if not isinstance(arms, dict) or not arms:
        raise SpecError(f"{path}: [arms] must name at least one arm, each a table of settings, e.g. "
                        "swarm = {} and single = {workers = 1, verify = 0}")
    for arm, overrides in arms.items():
        if not ARM_NAME.match(arm):
            raise SpecError(f"{path}: arm {arm!r}: an arm's name is letters, digits, '.', '_' or '-'")
        if not isinstance(overrides, dict):
            raise SpecError(f"{path}: arm {arm!r} must be a table of settings, e.g. {arm} = {{workers = 1}}")
        _not_held(path, f"arm {arm!r}", overrides)
        if "problem_ids" in overrides:
            raise SpecError(f"{path}: arm {arm!r} sets problem_ids: every arm works on the same problems "
                            "(set problem_ids in [solve] to work on some of the set)")
    return arms


def _not_held(path: Path, where: str, table: dict) -> None:
    for key in table:
        if key in HELD:
            raise SpecError(f"{path}: {where} sets {key}: the budget is the spec's [budget] table, held "
                            "equal across arms (episodes = N or tokens = N)")
        if key in PER_RUN:
            raise SpecError(f"{path}: {where} sets {key}: the experiment sets it for each run "
                            "(problems and seeds are top-level keys of the spec)")


def _seeds(path: Path, seeds: object) -> tuple[int, ...]:
    if (not isinstance(seeds, list) or not seeds or len(set(seeds)) != len(seeds)
            or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)):
        raise SpecError(f"{path}: seeds must be a list of distinct whole numbers, e.g. seeds = [0, 1]")
    return tuple(seeds)


def _budget(path: Path, budget: object) -> Budget:
    if not isinstance(budget, dict) or not budget or not set(budget) <= {"episodes", "tokens"}:
        raise SpecError(f"{path}: [budget] must hold exactly one of episodes = N (episodes per run, of any "
                        "outcome) or tokens = N (tokens per run), or both with tokens = \"smallest\" (equal "
                        "tokens: those of each seed's cheapest arm)")
    tokens = budget.get("tokens")
    if tokens == SMALLEST and "episodes" not in budget:
        raise SpecError(f"{path}: [budget] tokens = \"smallest\" needs episodes = N: every arm runs N episodes "
                        "first, then the arms that spent more run again under the cheapest arm's tokens")
    if tokens is not None and tokens != SMALLEST and "episodes" in budget:
        raise SpecError(f"{path}: [budget] must hold exactly one of episodes = N or tokens = N (a fixed amount "
                        f"per run); with both, tokens must be \"smallest\", not {tokens!r}")
    for key, value in budget.items():
        if key == "tokens" and value == SMALLEST:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            also = " or \"smallest\" (with episodes = N)" if key == "tokens" else ""
            raise SpecError(f"{path}: [budget] {key} must be a positive whole number{also}, not {value!r}")
    return Budget(budget.get("episodes"), None if tokens == SMALLEST else tokens, tokens == SMALLEST)


def _solve(path: Path, data: dict) -> tuple[dict, SolverSettings | None]:
    """The settings every arm starts from ([solve], as a config file's), and the solver's."""
    from gitswarm.engine.settings import file_settings

    solve = file_settings(path)  # refuses unknown keys, naming the file and [solve]
    _not_held(path, "[solve]", solve)
    if not solve.get("model"):
        raise SpecError(f"{path}: [solve] needs model = \"...\" (a litellm model string, or \"{SOLVER_MODEL}\" "
                        "for the scripted solver)")
    scripted = data.get("scripted")
    if solve["model"] != SOLVER_MODEL:
        if scripted is not None:
            raise SpecError(f"{path}: [scripted] sets the scripted solver's chances, but [solve] model is "
                            f"{solve['model']!r}, not {SOLVER_MODEL!r}")
        return solve, None
    if not isinstance(scripted or {}, dict):
        raise SpecError(f"{path}: [scripted] must be a table, e.g. p = 0.3")
    try:
        settings = SolverSettings(**(scripted or {}))
    except ValidationError as exc:
        raise SpecError(f"{path}: [scripted] {_errors(exc, SolverSettings.model_fields)}") from None
    return solve | {"model": SOLVER_LITELLM, "api_key": solve.get("api_key") or SOLVER_KEY}, settings


def _grade(path: Path) -> GradeConfig:
    from gitswarm.engine.settings import grade_settings, merge_grade

    try:
        return merge_grade({}, grade_settings(path))
    except ValidationError as exc:
        raise SpecError(f"{path}: [grade] {_errors(exc, GradeConfig.model_fields)}") from None


def _config(path: Path, problem_set: ProblemSet, run: Path, arm: str, base: dict, given: dict) -> SolveConfig:
    from gitswarm.engine.settings import merge

    try:
        return merge(problem_set, run, given, base)
    except ValidationError as exc:
        raise SpecError(f"{path}: arm {arm!r} (its settings over [solve]): "
                        f"{_errors(exc, SolveConfig.model_fields)}") from None
    except BadInput as exc:
        raise SpecError(f"{path}: arm {arm!r}: {exc}") from None


def _errors(exc: ValidationError, fields: dict) -> str:
    """pydantic's report as one clause per bad setting, naming the setting."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(x) for x in error["loc"])
        if error["type"] == "extra_forbidden":
            close = difflib.get_close_matches(where, sorted(fields), n=1)
            parts.append(f"unknown setting {where!r}" + (f" (did you mean {close[0]}?)" if close else ""))
        elif where:
            parts.append(f"{where}: {error['msg']} (got {error.get('input')!r})")
        else:
            parts.append(str(error["msg"]).removeprefix("Value error, "))
    return "; ".join(parts)
