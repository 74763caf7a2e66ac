"""How many gitswarm modules one episode's path runs code in, measured, beside how many
ARCHITECTURE.md §2 names.

One scripted episode (`write_file`, then `contribute` a note on `demo-odd-sum`, one worker,
`--budget 1 --verify 0`) runs through `cli.running.run_swarm` against the fake server, the
real litellm path and a real run repository. Every gitswarm module is imported first; then
`sys.setprofile` and `threading.setprofile` record the file of every gitswarm function called
(module bodies and the fake server left out) until the `merged` event (the merge is on
main); the rest of the run (selection) is counted apart.

The same profile follows the problem set, as a reader following `problem_set` from
`run_swarm` would: every gitswarm function that is handed the loaded `ProblemSet` (an
argument or local that is that object or holds it as an attribute, as `self` does) is a stop;
a climb back up is a stop that is not called, directly or further down, from the stop before
it (the reader must go back up to follow it).

`python scripts/bench_path.py [--list]` prints one JSON line (and with `--list`, the modules).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import pkgutil
import re
import sys
import tempfile
import threading
from pathlib import Path

import gitswarm

ROOT = Path(gitswarm.__file__).parent
ARCHITECTURE = ROOT.parent / "ARCHITECTURE.md"
PROBLEM = "demo-odd-sum"
NOTE = "# Odd sums\n\nThe sum of the first $n$ odd numbers is $n^2$.\n"


def import_all() -> None:
    """Every gitswarm module, so that the profile sees calls, not imports."""
    for info in pkgutil.walk_packages(gitswarm.__path__, "gitswarm."):
        if ".fakeserver" in info.name or info.name.endswith("__main__"):
            continue
        with contextlib.suppress(ImportError):  # an optional extra not installed here (the drawing library)
            importlib.import_module(info.name)


class Recorder:
    """The gitswarm modules whose functions run, before and after the merge on main."""

    def __init__(self) -> None:
        self.before: set[str] = set()
        self.after: set[str] = set()
        self.merged = False
        self.problem_set: object = None
        self.stops: dict[str, None] = {}
        self.climbs = 0
        self._last: object = None  # the frame of the latest stop

    def __call__(self, frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        path = Path(code.co_filename)
        if code.co_name == "<module>" or not path.is_relative_to(ROOT) or "fakeserver" in path.parts:
            return
        module = path.relative_to(ROOT).as_posix()
        (self.after if self.merged else self.before).add(module)
        self._follow(frame, f"{module}:{code.co_name}")
        said = frame.f_locals.get("event") if module == "engine/events.py" and code.co_name == "emit" else None
        if getattr(said, "kind", None) == "merged":
            self.merged = True


    def _holds(self, value: object) -> bool:
        """`value` is the problem set, or holds it as one of its attributes (`self.problem_set`)."""
        if value is self.problem_set:
            return True
        fields = getattr(value, "__dict__", None) if not isinstance(value, type) else None
        return isinstance(fields, dict) and any(v is self.problem_set for v in fields.values())

    def _follow(self, frame, stop: str) -> None:
        """Count `frame` as a stop of the problem set's walk when it holds the set (`problem_set`)."""
        if self.problem_set is None or stop.endswith(">") or not any(self._holds(v) for v in frame.f_locals.values()):
            return  # a comprehension or lambda is a part of its function
        if stop not in self.stops:
            above, caller = {id(self._last)}, frame.f_back
            while caller is not None and id(caller) not in above:
                caller = caller.f_back
            self.climbs += self._last is not None and caller is None
            self.stops[stop] = None
        self._last = frame


def run_one_episode(folder: Path, recorder: Recorder) -> int:
    from gitswarm.cli.running import run_swarm
    from gitswarm.engine.config import SolveConfig
    from gitswarm.fakeserver import FakeReply, ScriptedResponder
    from gitswarm.problems.loader import load_set
    from gitswarm.resources import resolve_set

    write = {"name": "write_file", "arguments": {"path": "notes/odd.md", "content": NOTE}}
    contribute = {"name": "contribute", "arguments": {"kind": "note", "title": "odd sums", "summary": "n^2"}}
    script = ScriptedResponder([FakeReply(tool_calls=[write]), FakeReply(tool_calls=[contribute])])
    problems = resolve_set("demo")
    cfg = SolveConfig(problems=problems, run=folder / "run", model="openai/gitswarm-scripted", workers=1,
                      verify=0, budget=1, max_episodes=1, problem_ids=(PROBLEM,))
    problem_set = recorder.problem_set = load_set(problems)
    threading.setprofile(recorder)
    sys.setprofile(recorder)
    try:
        return run_swarm(cfg, problem_set, as_json=True, responder=script)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


def named_in_architecture() -> list[str]:
    """The modules §2 numbers as the path enters them (`path.py` [n])."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text[text.index("## 2."):text.index("## 3.")]
    return re.findall(r"`([\w/]+\.py)`\s+\[\d+\]", section)


def main() -> None:
    import_all()
    recorder = Recorder()
    with tempfile.TemporaryDirectory() as folder:
        code = run_one_episode(Path(folder), recorder)
    named = named_in_architecture()
    print(json.dumps({"exit": code, "merged": recorder.merged, "named_in_architecture": len(named),
                      "run_code_to_merge": len(recorder.before),
                      "run_code_in_all": len(recorder.before | recorder.after),
                      "named_not_run": sorted(set(named) - recorder.before),
                      "problem_set_stops": len(recorder.stops),
                      "problem_set_files": len({s.split(":")[0] for s in recorder.stops}),
                      "problem_set_climbs": recorder.climbs}))
    if "--list" in sys.argv:
        for module in sorted(recorder.before):
            print(("* " if module in named else "  ") + module)
        print("the problem set's stops:", *recorder.stops, sep="\n  ")


if __name__ == "__main__":
    main()
