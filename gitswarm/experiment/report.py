"""The comparison of an experiment's arms, as one JSON-ready dict: per arm (solved, mean
score, tokens and USD per solved problem, wall time, episodes by outcome, the compounding
figures, the selector's quality against the referee), each arm against the baseline (paired by
problem and seed, with a bootstrap 95% CI; per problem kind too, where the set has several),
and per run (the numbers `gitswarm status --json` gives of it). Read-only."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

from gitswarm.experiment.budget import EqualSpend, equal_spend
from gitswarm.experiment.figures import BROKEN, FINISHED, RunFigures, read_figures
from gitswarm.experiment.spec import Spec
from gitswarm.experiment.stats import RESAMPLES, compare

SCORES = ("Scores: each problem's selected solution as the referee grades it (score / max); a problem "
          "with no selected solution scores 0, and solved means full marks. Tokens and USD are every "
          "call of a run, the merger's and failed ones too, as `gitswarm status --json` gives them.")
WAITING = "waiting"
"""A finished pass-1 run whose seed's T is not known yet: its arm's equal-spend run may follow."""
COMPOUNDING = ("Compounding, as `gitswarm report` computes it, from citations: citing is the share of "
               "contributions that cite another of the same problem; built on, the share that another "
               "contribution of the same problem cites; in ancestry, the share in a selected solution's "
               "ancestry (the solution, what it cites, repeatedly, and the pass reviews that verified it).")


def build(spec: Spec) -> dict:
    """The report of the experiment's runs as they stand (finished or not)."""
    firsts = [read_figures(p.arm, p.seed, p.config.run) for p in spec.runs]
    fair = settled(spec, firsts)
    again = [read_figures(p.arm, p.seed, p.config.run) for seed in fair for p in spec.again(fair[seed])]
    return assemble(spec, firsts, again, fair)


def settled(spec: Spec, firsts: list[RunFigures]) -> dict[int, EqualSpend]:
    """Under equal tokens, each seed's T, for the seeds whose pass 1 is finished."""
    if not spec.budget.smallest:
        return {}
    found = {seed: equal_spend(seed, [f for f in firsts if f.seed == seed]) for seed in spec.seeds}
    return {seed: fair for seed, fair in found.items() if fair is not None}


def assemble(spec: Spec, figures: list[RunFigures], again: list[RunFigures] | None = None,
             fair: dict[int, EqualSpend] | None = None) -> dict:
    """The report from each run's figures (`figures` in the spec's run order; under equal tokens,
    `again` the equal-spend runs of the seeds `fair` settled): the arms are compared by the runs
    that stand for them, and every run is listed."""
    again, fair = again or [], fair or {}
    stand = standing(spec, figures, again, fair)
    done = [f for f in stand if f.state == FINISHED]
    pairs = {arm: _pairs(spec, arm, stand) for arm in spec.arms}
    comparisons = [compare(arm, spec.baseline, pairs[arm], pairs[spec.baseline]).as_dict()
                   for arm in spec.arms if arm != spec.baseline]
    kinds = _kinds(spec)
    by_kind = [compare(arm, spec.baseline, _of(pairs[arm], ids), _of(pairs[spec.baseline], ids)).as_dict()
               | {"kind": kind} for arm in spec.arms if arm != spec.baseline for kind, ids in kinds.items()
               ] if len(kinds) > 1 else []
    standing_paths = {f.path for f in stand}
    runs = [f.as_dict() | {"name": Path(f.path).name, "pass": 2 if f in again else 1,
                           "stands": f.path in standing_paths} for f in [*figures, *again]]
    costs = [f.cost_usd for f in [*figures, *again]]
    known = [c for c in costs if c is not None]
    return {"experiment": spec.name, "spec": str(spec.path), "folder": str(spec.folder),
            "problems": str(spec.problem_set.path), "model": _model(spec), "simulated": spec.scripted is not None,
            "budget": spec.budget.describe(), "seeds": list(spec.seeds), "baseline": spec.baseline,
            "resamples": RESAMPLES,
            "arms": [_arm(spec, arm, [f for f in stand if f.arm == arm], [f for f in done if f.arm == arm])
                     for arm in spec.arms],
            "comparisons": comparisons, "by_kind": by_kind, "runs": runs,
            "equal_spend": [fair[seed].as_dict() | {"standing": spec.standing(fair[seed])} if seed in fair
                            else {"seed": seed, "tokens": None}
                            for seed in spec.seeds] if spec.budget.smallest else None,
            "spent": {"tokens": sum(f.tokens for f in [*figures, *again]),
                      "cost_usd": round(sum(known), 6) if len(known) == len(costs) else None},
            "notes": _notes(spec, stand, done, again, fair),
            "definitions": {"scores": SCORES, "compounding": COMPOUNDING}}


def standing(spec: Spec, figures: list[RunFigures], again: list[RunFigures],
             fair: dict[int, EqualSpend]) -> list[RunFigures]:
    """The run that stands for each arm × seed: its pass-1 run, or under equal tokens its
    equal-spend run when it spent more than T; a seed whose T is not known yet has none (shown
    as `waiting` when its pass-1 run is finished)."""
    if not spec.budget.smallest:
        return figures
    capped = {(f.arm, f.seed): f for f in again}
    stand = []
    for f in figures:
        if f.seed not in fair:
            stand.append(replace(f, state=WAITING) if f.state == FINISHED else f)
        else:
            stand.append(capped.get((f.arm, f.seed), f))
    return stand


def _model(spec: Spec) -> str:
    plan = spec.runs[0].config
    return "scripted-solver" if spec.scripted is not None else plan.model


def _pairs(spec: Spec, arm: str, figures: list[RunFigures]) -> dict[tuple[str, int], float | None]:
    """The arm's score per (problem, seed): None where its run is not finished or not graded."""
    problems = list(spec.runs[0].config.problem_ids) or [p.id for p in spec.problem_set.problems]
    found: dict[tuple[str, int], float | None] = {}
    for f in figures:
        if f.arm == arm:
            for problem in problems:
                found[(problem, f.seed)] = f.scores.get(problem) if f.state == FINISHED else None
    return found


def _kinds(spec: Spec) -> dict[str, set[str]]:
    """The experiment's problems by kind."""
    chosen = set(spec.runs[0].config.problem_ids) or {p.id for p in spec.problem_set.problems}
    found: dict[str, set[str]] = {}
    for p in spec.problem_set.problems:
        if p.id in chosen:
            found.setdefault(p.kind.value, set()).add(p.id)
    return found


def _of(pairs: dict[tuple[str, int], float | None], ids: set[str]) -> dict[tuple[str, int], float | None]:
    return {key: score for key, score in pairs.items() if key[0] in ids}


def _selector(done: list[RunFigures]) -> dict:
    """The selector's figures summed over the arm's finished runs (`report.selector`)."""
    counts = ("graded", "candidates", "selected", "picked_best", "contested", "critical", "critical_confirmed",
              "passes", "false_passes")
    found = {name: sum(int(f.selector.get(name, 0)) for f in done) for name in counts}
    reviewers = list(dict.fromkeys(str(f.selector["reviewer"]) for f in done if f.selector.get("reviewer")))
    return found | {"reviewer": ", ".join(reviewers) or None,
                    "scripted": any(bool(f.selector.get("scripted")) for f in done)}


def _arm(spec: Spec, arm: str, runs: list[RunFigures], done: list[RunFigures]) -> dict:
    scores = [s for f in done for s in f.scores.values()]
    graded = [s for s in scores if s is not None]
    solved = sum(f.solved for f in done)
    tokens = sum(f.tokens for f in done)
    costs = [f.cost_usd for f in done]
    known = [c for c in costs if c is not None]
    usd = round(sum(known), 6) if done and len(known) == len(costs) else None
    outcomes: Counter[str] = Counter()
    for f in done:
        outcomes.update(f.outcomes)
    contributions = sum(f.contributions for f in done)
    return {"arm": arm, "settings": spec.arms[arm], "runs": len(runs), "finished": len(done),
            "scores": len(scores), "graded": len(graded), "solved": solved,
            "mean_score": round(sum(graded) / len(graded), 4) if graded else None,
            "episodes": sum(f.episodes for f in done), "tokens": tokens, "cost_usd": usd,
            "tokens_per_solved": round(tokens / solved, 1) if solved else None,
            "usd_per_solved": round(usd / solved, 6) if solved and usd is not None else None,
            "wall_seconds": round(sum(f.wall_seconds for f in done), 3), "outcomes": dict(outcomes),
            "contributions": contributions,
            "built_on_share": _share(sum(f.built_on for f in done), contributions),
            "ancestry_share": _share(sum(f.in_ancestry for f in done), contributions),
            "citation_rate": _share(sum(f.citing for f in done), contributions),
            "selector": _selector(done)}


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _notes(spec: Spec, figures: list[RunFigures], done: list[RunFigures], again: list[RunFigures],
           fair: dict[int, EqualSpend]) -> list[str]:
    """`figures` the standing runs, `done` the finished ones."""
    notes = []
    if spec.scripted is not None:
        s = spec.scripted
        notes.append(f"The model is the scripted solver (p = {s.p}, boost = {s.boost}, check = {s.check}): a "
                     "simulator that shows the mechanics of an experiment. Its figures are never evidence about "
                     "real models.")
    notes.append(f"Budget held equal across arms: {spec.budget.describe()}. Each arm runs once per seed "
                 f"({', '.join(map(str, spec.seeds))}); differences are paired by problem and seed against "
                 f"{spec.baseline}, with a percentile-bootstrap 95% CI over {RESAMPLES} resamples of the pairs.")
    if spec.budget.smallest:
        notes += _equal_spend_notes(spec, again, fair)
    if len(done) < len(figures):
        missing = ", ".join(f"{Path(f.path).name} ({f.state})" for f in figures if f.state != FINISHED)
        notes.append(f"{len(figures) - len(done)} of {len(figures)} runs are not finished ({missing}): the "
                     "figures cover finished runs only; run the experiment again to finish them.")
    broken = [f"{Path(f.path).name} ({f.reason})" for f in done if f.reason in BROKEN]
    if broken:
        notes.append(f"Runs ended by the provider or by gitswarm, not by their budget: {', '.join(broken)}. Their "
                     "figures measure that failure, not the arm; remove their folders and run again to redo them.")
    ungraded = sum(s is None for f in done for s in f.scores.values())
    if ungraded:
        notes.append(f"{ungraded} (problem, seed) score(s) are ungraded (a proof needs a referee: [grade] "
                     "referee_model in the spec): left out of the mean scores and the comparisons.")
    return notes


def _equal_spend_notes(spec: Spec, again: list[RunFigures], fair: dict[int, EqualSpend]) -> list[str]:
    """Per seed, what T was and which arms were run again under it; that pass 1 is listed too."""
    notes = []
    for seed in spec.seeds:
        if seed not in fair:
            notes.append(f"Seed {seed}: pass 1 is not finished (or a run of it ended by the provider or gitswarm), "
                         "so its T is not known and no run stands for its arms yet.")
            continue
        f = fair[seed]
        rerun = (f"{', '.join(f.again)} spent more and {'was' if len(f.again) == 1 else 'were'} run again under a "
                 f"cap of T; {'that run stands' if len(f.again) == 1 else 'those runs stand'} for "
                 f"{'it' if len(f.again) == 1 else 'them'}") if f.again else "every arm spent T"
        notes.append(f"Seed {seed}: T = {f.tokens} tokens, the spend of {f.smallest}'s pass-1 run, which stands "
                     f"for {f.smallest}; {rerun}.")
    notes.append("The arms are compared by the runs that stand for them; the Runs table lists pass 1 as well, "
                 f"and the experiment's spend counts both passes ({len(again)} equal-spend run"
                 f"{'' if len(again) == 1 else 's'} in pass 2).")
    return notes
