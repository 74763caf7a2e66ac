"""The one place where a run's settings are merged: built-in defaults, then the problem
set's `set.toml` [defaults], then the user's config file, then the environment and the
command line (which typer reads together; the command line wins)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from gitswarm.engine.config import SolveConfig
from gitswarm.problems.model import ProblemSet

CONFIG_ENV = "GITSWARM_CONFIG"
BUDGET_PER_PROBLEM = 8


def config_file() -> Path | None:
    """`$GITSWARM_CONFIG`, else `./gitswarm.toml`, else `~/.config/gitswarm/config.toml`."""
    given = os.environ.get(CONFIG_ENV)
    if given:
        if not Path(given).is_file():
            raise ValueError(f"{CONFIG_ENV}={given}: no such file")
        return Path(given)
    for candidate in (Path("gitswarm.toml"), Path.home() / ".config" / "gitswarm" / "config.toml"):
        if candidate.is_file():
            return candidate
    return None


def file_settings(path: Path | None) -> dict[str, object]:
    """The `[solve]` table of a config file, checked against SolveConfig's fields."""
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text; save the config file as UTF-8") from None
    table = data.get("solve", {})
    if not isinstance(table, dict):
        raise ValueError(f"{path}: [solve] must be a table of settings, e.g. model = \"openai/gpt-4o\"")
    known = set(SolveConfig.model_fields) - {"problems", "run"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ValueError(f"{path}: unknown setting(s) {', '.join(unknown)} in [solve]; "
                         f"known: {', '.join(sorted(known))}")
    return table


def merge(problem_set: ProblemSet, run: Path | None, given: dict[str, object],
          from_file: dict[str, object]) -> SolveConfig:
    """SolveConfig from set defaults < config file < `given` (flags and environment, None = unset)."""
    set_defaults = {k: v for k, v in problem_set.defaults.items() if k in SolveConfig.model_fields}
    settings = {"budget": BUDGET_PER_PROBLEM * len(problem_set.problems)} | set_defaults | from_file
    settings |= {k: v for k, v in given.items() if v is not None and v != ()}
    unknown = set(settings.get("problem_ids", ())) - {p.id for p in problem_set.problems}
    if unknown:
        raise ValueError(f"no problem {', '.join(sorted(unknown))} in {problem_set.path}")
    if not settings.get("model"):
        settings["model"] = ""
    return SolveConfig(problems=problem_set.path, run=run or Path("runs") / problem_set.name, **settings)
