"""The trailer keys of gitswarm's commits live in the codec only (`memory.commitmeta` and the
line format under it, `memory.trailers`): every other module writes and reads a commit's
metadata as a typed record, so no module outside them names a key, prefixed or bare."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import gitswarm
from gitswarm.memory import commitmeta
from gitswarm.memory.trailers import PREFIX

PACKAGE = Path(gitswarm.__file__).parent
CODEC = {PACKAGE / "memory" / "commitmeta.py", PACKAGE / "memory" / "trailers.py"}
RECORDS = (commitmeta.ContributionRecord, commitmeta.NominationRecord, commitmeta.ReviewRecord, commitmeta.Merge,
           commitmeta.Solution, commitmeta.GradeRecord, commitmeta.Removal, commitmeta.ClaimNote, commitmeta.Other)
KEYS = sorted({f.metadata["key"] for cls in RECORDS for f in fields(cls) if "key" in f.metadata})
QUOTED = "|".join(re.escape(k) for k in KEYS)
AS_KEY = re.compile(rf"""(["'])({QUOTED})\1\s*:(?!\S)|\.get\(\s*(["'])({QUOTED})\3|\[\s*(["'])({QUOTED})\5\s*\]""")
"""A trailer key used as one: a dict literal's key, `.get("Key"` or `["Key"]`."""
ALLOWED = {("problems/importers.py", "Problem")}
"""Not trailers: a column of the IMO benchmark's CSV files is also called `Problem`."""


def bare_keys(text: str) -> list[str]:
    """The trailer keys `text` uses as keys, outside comments."""
    return [next(g for g in m.groups()[1::2] if g) for line in text.splitlines()
            for m in AS_KEY.finditer(line.split("#")[0])]


def sources(suffixes: tuple[str, ...]) -> list[Path]:
    return [p for p in PACKAGE.rglob("*") if p.suffix in suffixes and p not in CODEC and "__pycache__" not in p.parts]


def test_the_records_name_the_keys_this_scan_looks_for():
    assert {"Reviews", "Verdict", "Op", "Files", "Candidate", "Claim", "Grader", "Model"} <= set(KEYS)
    assert bare_keys('trailers = {"Reviews": a, "Verdict": str(v)}') == ["Reviews", "Verdict"]
    assert bare_keys('op = parse(message).get("Op", "")  # old') == ["Op"]
    assert bare_keys("worker = found['Worker']") == ["Worker"]
    assert bare_keys('SECTIONS = ("Run", "Model")') == [] and bare_keys('f"{x}: Verdict: {y}"') == []


def test_no_module_outside_the_codec_names_a_prefixed_key():
    found = [f"{p.relative_to(PACKAGE)}:{n}: {line.strip()}" for p in sources((".py", ".j2", ".md", ".toml", ".txt"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if PREFIX in line]
    assert found == []


def test_no_module_outside_the_codec_uses_a_bare_trailer_key():
    found = [f"{p.relative_to(PACKAGE)}: {key}" for p in sources((".py",))
             for key in bare_keys(p.read_text(encoding="utf-8"))
             if (p.relative_to(PACKAGE).as_posix(), key) not in ALLOWED]
    assert found == []
