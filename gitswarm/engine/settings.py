"""The one place where a run's settings are merged: built-in defaults, then the problem
set's `set.toml` [defaults], then the user's config file, then the environment and the
command line (which typer reads together; the command line wins). `gitswarm grade` reads
the config file's [grade] table the same way."""

from __future__ import annotations

import difflib
import os
import tomllib
from pathlib import Path

from gitswarm.engine.config import GradeConfig, SolveConfig
from gitswarm.errors import BadInput
from gitswarm.problems.model import ProblemSet

CONFIG_ENV = "GITSWARM_CONFIG"


def config_file() -> Path | None:
    """`$GITSWARM_CONFIG`, else `./gitswarm.toml`, else `~/.config/gitswarm/config.toml`."""
    given = os.environ.get(CONFIG_ENV)
    if given:
        if not Path(given).is_file():
            raise BadInput(f"{CONFIG_ENV}={given}: no such file")
        return Path(given)
    for candidate in (Path("gitswarm.toml"), Path.home() / ".config" / "gitswarm" / "config.toml"):
        if candidate.is_file():
            return candidate
    return None


AMBIGUOUS_MAX_TOKENS = ("is no longer a setting: it reads as a per-reply limit. Use --max-total-tokens "
                        "(max_total_tokens in a config file) for the run's cap on tokens, or "
                        "--max-output-tokens (max_output_tokens) for the tokens of one reply")
"""Why `max_tokens` (the run's token cap before it was renamed) is refused."""


def file_settings(path: Path | None) -> dict[str, object]:
    """The `[solve]` table of a config file, checked against SolveConfig's fields."""
    table = _table(path, "solve", "model = \"openai/gpt-5.5\"")
    if "max_tokens" in table:
        raise BadInput(f"{path}: max_tokens in [solve] {AMBIGUOUS_MAX_TOKENS}")
    _known(path, "solve", table, set(SolveConfig.model_fields) - {"problems", "run"})
    return table


def grade_settings(path: Path | None) -> dict[str, object]:
    """The `[grade]` table of a config file, checked against GradeConfig's fields."""
    table = _table(path, "grade", "reasoning_effort = \"high\"")
    _known(path, "grade", table, set(GradeConfig.model_fields))
    return table


def merge_grade(given: dict[str, object], from_file: dict[str, object]) -> GradeConfig:
    """GradeConfig from the config file's [grade] table < `given` (flags, None = unset)."""
    return GradeConfig(**from_file | {k: v for k, v in given.items() if v is not None})


def _table(path: Path | None, name: str, example: str) -> dict[str, object]:
    """One table of a config file (empty when there is no file or no such table)."""
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text; save the config file as UTF-8") from None
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise BadInput(f"{path}: [{name}] must be a table of settings, e.g. {example}")
    return table


def _known(path: Path | None, name: str, table: dict[str, object], known: set[str]) -> None:
    """Refuse a setting the table may not hold, naming the known one it is closest to (or,
    when none is close, every known one)."""
    unknown = sorted(set(table) - known)
    if not unknown:
        return
    close = [m for u in unknown for m in difflib.get_close_matches(u, sorted(known), n=1)]
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(sorted(known))}"
    raise BadInput(f"{path}: unknown setting(s) {', '.join(unknown)} in [{name}]; {hint}")


def merge(problem_set: ProblemSet, run: Path | None, given: dict[str, object],
          from_file: dict[str, object]) -> SolveConfig:
    """SolveConfig from set defaults < config file < `given` (flags and environment, None = unset)."""
    set_defaults = {k: v for k, v in problem_set.defaults.items() if k in SolveConfig.model_fields}
    settings = set_defaults | from_file
    settings |= {k: v for k, v in given.items() if v is not None and v != ()}
    ids = settings.get("problem_ids", ())
    # A config file's value may be anything: one that is not a list of names is SolveConfig's to refuse.
    named = set(ids) if isinstance(ids, list | tuple) and all(isinstance(i, str) for i in ids) else set()
    unknown = named - {p.id for p in problem_set.problems}
    if unknown:
        raise BadInput(f"no problem {', '.join(sorted(unknown))} in {problem_set.path}")
    if not settings.get("model"):
        settings["model"] = ""
    return SolveConfig.for_set(problem_set, run or Path("runs") / problem_set.name, **settings)
