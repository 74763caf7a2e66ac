"""Settings merge: set defaults < config file < environment and flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitswarm.engine.settings import config_file, file_settings, merge
from gitswarm.problems.loader import load_set


def test_precedence_and_default_budget(problem_dir: Path, tmp_path: Path, monkeypatch):
    (problem_dir / "set.toml").write_text("[defaults]\nworkers = 2\nmax_steps = 7\n")
    problem_set = load_set(problem_dir)
    config = tmp_path / "gitswarm.toml"
    config.write_text('[solve]\nmodel = "openai/from-file"\nworkers = 6\n')
    monkeypatch.setenv("GITSWARM_CONFIG", str(config))
    cfg = merge(problem_set, None, {"workers": None, "seed": 3}, file_settings(config_file()))
    assert (cfg.model, cfg.workers, cfg.max_steps, cfg.seed) == ("openai/from-file", 6, 7, 3)
    assert cfg.budget == 8 * 3 and cfg.run == Path("runs") / problem_set.name
    cfg = merge(problem_set, tmp_path / "r", {"workers": 9, "model": "openai/flag"}, file_settings(config))
    assert (cfg.model, cfg.workers, cfg.run) == ("openai/flag", 9, tmp_path / "r")


def test_bad_config_files_are_named(tmp_path: Path, problem_dir: Path, monkeypatch):
    bad = tmp_path / "bad.toml"
    bad.write_text("[solve]\nwokers = 3\n")
    with pytest.raises(ValueError, match=r"unknown setting.*wokers"):
        file_settings(bad)
    bad.write_text("[solve\n")
    with pytest.raises(ValueError, match=r"bad\.toml: invalid TOML"):
        file_settings(bad)
    monkeypatch.setenv("GITSWARM_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ValueError, match="no such file"):
        config_file()
    with pytest.raises(ValueError, match="no problem nope"):
        merge(load_set(problem_dir), None, {"problem_ids": ("nope",)}, {})
