"""What a run inherited from the run it began from (`solve --from`), and what of it the run's
selected solutions built on: the inherited commits their citations reach (a citation of a
citation too), and an inherited candidate selected as it was."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from gitswarm.domain.index import MemoryIndex
from gitswarm.domain.kinds import candidate_path
from gitswarm.readmodel.model import RunState
from gitswarm.report.graph import Graph, cited_from


@dataclass(frozen=True)
class Inherited:
    """The run's inheritance, as the report tells it."""

    run: str
    """The run it began from."""
    commit: str
    """That run's main when it began."""
    problems: list[str]
    """The problems both runs have."""
    items: dict[str, int]
    """Inherited items on main now, by folder (notes, lemmas, attempts, reviews, code)."""
    built_on: list[dict] = field(default_factory=list)
    """Per selected solution built on inherited work: `problem`, `selected` (its path) and
    `inherited` (the paths of the inherited items its citations reach)."""
    cited: int = 0
    """Inherited items this run's own work cited at all."""

    def as_dict(self) -> dict:
        return asdict(self)

    def sentence(self) -> str:
        """One paragraph for the report."""
        items = ", ".join(f"{n} {kind}" for kind, n in sorted(self.items.items())) or "no items"
        said = [f"Inherited from run {self.run} (its main at {self.commit[:12]}) for {len(self.problems)} "
                f"problem(s): {items}; this run's own work cited {self.cited} inherited item(s)."]
        for b in self.built_on:
            mark = " is inherited" if b["selected_inherited"] else ""
            chosen = f"{b['problem']}: the selected {b['selected']}{mark}"
            built = f" built on {', '.join(b['inherited'])}" if b["inherited"] else ""
            said.append(chosen + (" and" if b["selected_inherited"] and built else "") + built + ".")
        if not self.built_on:
            said.append("No selected solution built on inherited work.")
        return " ".join(said)


def inherited(meta: dict, index: MemoryIndex, graph: Graph, state: RunState) -> Inherited | None:
    """The inheritance of the run whose metadata is `meta` (None for a run that began afresh),
    from its index over main, its history and its read model."""
    origin = meta.get("inherits")
    if not isinstance(origin, dict):
        return None
    problems = [p for p in origin.get("problems", []) if isinstance(p, str)]
    items: Counter[str] = Counter()
    paths: dict[str, str] = {}
    for pid in problems:
        for path, commit in index.problems[pid].items.items():
            if commit in index.inherited:
                items[path.split("/")[0]] += 1
                paths.setdefault(commit, path)
    built_on = []
    for p in state.problems:
        if p.selected is None:
            continue
        chosen = p.selected.candidate
        reached = sorted({candidate_path(paths.get(c, c[:12])) for c in cited_from(graph, chosen) - {chosen}
                          if c in index.inherited})
        if reached or chosen in index.inherited:
            built_on.append({"problem": p.id, "selected": p.selected.path.removeprefix(f"problems/{p.id}/"),
                             "selected_inherited": chosen in index.inherited, "inherited": reached})
    return Inherited(str(origin.get("run", "")), str(origin.get("commit", "")), problems, dict(items), built_on,
                     len(index.built_on))
