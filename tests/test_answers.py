"""Answer extraction and equivalence: a table across the forms, plus IMO-AnswerBench keys."""

from __future__ import annotations

import csv
import itertools
import random
import re
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest

from gitswarm.referee.answers import Verdict, equivalent, extract_answer
from gitswarm.referee.latex import clean
from gitswarm.referee.symbolic import SymbolicWorker

ANSWERBENCH = (Path(__file__).resolve().parents[2] / "shared" / "data" / "imobench"
               / "answerbench_v2.pr18-fixed.csv")

T, F, U = True, False, None
CASES = [
    # integers and decimals, exactly
    ("42", "42", T), ("$42$", "42", T), ("42.0", "42", T), ("1,000", "1000", T),
    ("1{,}000", "1000", T), ("1\\,000", "1000", T), ("0.5", "\\frac{1}{2}", T),
    ("1.75", "7/4", T), ("-3", "-3", T), ("41", "42", F), ("4151879778", "4151879777", F),
    ("0.333", "\\frac{1}{3}", F), ("-768", "768", F), ("2", "2.0001", F),
    # fractions, radicals, LaTeX
    ("\\dfrac{2023}{-2024^2}", "-\\frac{2023}{2024^2}", T), ("\\tfrac12", "\\frac{1}{2}", T),
    ("\\frac{1}{\\sqrt{2}+1}", "\\sqrt{2}-1", T), ("\\sqrt{8}", "2\\sqrt{2}", T),
    ("\\frac{3\\sqrt{15}}{10}", "\\frac{3\\sqrt{3}}{2\\sqrt{5}}", T),
    ("\\left(\\frac{5+\\sqrt{21}}{2}\\right)", "\\frac{5+\\sqrt{21}}{2}", T),
    ("4 \\cdot 3^{2023}", "4\\cdot3^{2023}", T), ("4 \\times 3^{2023}", "4\\cdot3^{2023}", T),
    ("2^{2024} + 1", "2^{2024}+1", T), ("2^{2024}", "2^{2024}+1", F),
    ("\\sqrt{2}", "1.4142", F), ("\\sqrt 2", "\\sqrt{3}", F),
    ("\\pi (l + 2)", "\\pi(l+2)", T), ("\\pi l + 2\\pi", "\\pi(l+2)", T),
    ("\\frac{\\sqrt{510}\\pi}{3}", "\\frac{\\sqrt{510}}{3} \\pi", T),
    ("2\\sqrt[3]{196/13}", "2\\sqrt[3]{\\frac{196}{13}}", T),
    ("90^\\circ", "90", T), ("90^{\\circ}", "90", T), ("12 \\text{ cm}", "12", T),
    ("\\text{12}", "12", T), ("13 units", "13", T),
    # symbolic
    ("2025^2a^2 - 2025^2 a", "2025^2 a(a-1)", T), ("(n+1)^2", "n^2+2n+1", T),
    ("2^{u-2}", "2^{u-1}/2", T), ("2 - 2m", "2-2m", T), ("2m - 2", "2-2m", F),
    ("\\frac{pq}{p+q}", "\\frac{1}{1/p + 1/q}", T), ("\\frac{pq}{p+q}", "\\frac{p}{p+q}", F),
    ("180 - 2\\alpha", "180^\\circ - 2\\alpha", T), ("\\binom{2k}{k}^2", "\\binom{2k}{k}^{2}", T),
    ("\\lfloor \\sqrt{n-1} \\rfloor", "\\lfloor\\sqrt{n-1}\\rfloor", T),
    ("\\lfloor \\sqrt{n} \\rfloor", "\\lfloor\\sqrt{n-1}\\rfloor", F),
    ("2^{n-2}", "2^{u-2}", U), ("(p-1)^2", "p^2 - 2p + 1", T), ("(p-1)^2", "p^2-1", F),
    ("\\frac{R^2+Rr}{\\sqrt{R^2-2Rr}}", "\\frac{R(R+r)}{\\sqrt{R(R-2r)}}", T),
    # sets and tuples
    ("\\{1, 2, 3\\}", "\\{3, 2, 1\\}", T), ("\\{1, 2\\}", "\\{1, 2, 3\\}", F),
    ("3, 4", "4, 3", T), ("2026, 2030", "2026, 2031", F), ("1/2,1,2", "2, 1, 0.5", T),
    ("(1, 2)", "(1, 2)", T), ("(1,2)", "(2,1)", F), ("(3,2,5)", "(3, 2, 5)", T),
    ("(2, 1/2, 9/4)", "(2, \\frac{1}{2}, \\frac{9}{4})", T), ("(2,251,252)", "(2, 252, 251)", F),
    ("\\{1,3,5\\}", "1,3,5", T), ("1 or 3", "1, 3", T), ("\\emptyset", "\\{\\}", T),
    ("x = 2 \\pm \\sqrt{3}", "2+\\sqrt{3}, 2-\\sqrt{3}", T),
    ("-\\frac{2}{3}, 0, \\frac{2}{3}", "$-\\frac{2}{3},0,\\frac{2}{3}$", T),
    # intervals and unions
    ("[-6, 5]", "[-6,5]", T), ("[-6, 5)", "[-6,5]", F), ("(0, \\infty)", "(0,+\\infty)", T),
    ("x > 0", "(0, \\infty)", T), ("x \\ge -\\frac{6}{5}", "[-1.2, \\infty)", T),
    ("c \\in (0, 1)", "0<c<1", T), ("0 < c \\le 1", "0<c<1", F), ("(-\\infty, 0]", "x \\le 0", T),
    ("(-\\infty,-3) \\cup (-3,\\infty)", "(-\\infty, -3) \\cup (-3, \\infty)", T),
    ("(-3, \\infty) \\cup (-\\infty, -3)", "(-\\infty, -3) \\cup (-3, \\infty)", T),
    ("(-\\infty,-4)\\cup(-4,-8/3)", "$(-\\infty,-4)\\cup (-4,-\\frac{8}{3})$", T),
    ("(-\\infty,-4)\\cup(-4,-2)", "$(-\\infty,-4)\\cup (-4,-\\frac{8}{3})$", F),
    ("[-6, 5]", "5", F),
    # "all n such that" families and labelled answers
    ("n \\in \\{1, 2, 4\\}", "n = 1, 2, 4", T), ("n = 1, n = 2, n = 4", "n = 1, 2, 4", T),
    ("1, 2, 4", "n = 1, 2, 4", T), ("n \\in \\{1, 2, 5\\}", "n = 1, 2, 4", F),
    ("k = 0, 1, 3", "k \\in \\{0,1,3\\}", T), ("k=0,1", "k \\in \\{0,1,3\\}", F),
    ("n=2k, n=3k", "n = 3k, n = 2k", T), ("n = 4k+3", "$n=4k+3$", T),
    ("f(x) = x + 1", "f(x)=x+1", T), ("f(x) = 1 + x", "f(x)=x+1", T), ("x + 1", "f(x)=x+1", T),
    ("f(x) = x - 1", "f(x)=x+1", F), ("P(x) = x - 4", "$P(x) = x - 4$\n", T),
    ("g(x)=-2x^3+c, g(x)=2x^3+c", "$g(x)=2x^{3}+c, g(x)=-2x^{3}+c$ ", T),
    ("g(x)=2x^3+c", "$g(x)=2x^{3}+c, g(x)=-2x^{3}+c$ ", F),
    # prose: exact or undecided, never a guess
    ("odd $n$", "odd $n$", T), ("Odd n", "odd $n$", T), ("even n", "odd $n$", U),
    ("All powers of 2", "All powers of 2\n", T), ("5", "odd $n$", U),
    ("taking the empty card", "taking the empty card", T),
    # wrappers and prefixes
    ("\\boxed{17}", "17", T), ("Answer: 17", "17", T), ("**Answer:** 17", "17", T),
    ("The final answer is $\\frac{7}{2}$.", "\\frac{7}{2}", T), ("$$ 3 $$", "3", T),
    ("\\( 3 \\)", "3", T), ("", "3", F),
]


@pytest.fixture(scope="module")
def worker() -> Iterator[SymbolicWorker]:
    helper = SymbolicWorker()
    yield helper
    helper.close()


@pytest.mark.parametrize(("candidate", "key", "expected"), CASES)
def test_equivalence_table(candidate: str, key: str, expected: bool | None,
                           worker: SymbolicWorker) -> None:
    verdict = equivalent(candidate, key, worker=worker)
    assert verdict.equal is expected, verdict
    if expected is not None:
        assert equivalent(key, candidate, worker=worker).equal is expected  # symmetric


def test_table_is_large_and_balanced() -> None:
    assert len(CASES) >= 60
    assert sum(e is True for *_, e in CASES) >= 30 and sum(e is False for *_, e in CASES) >= 20


def test_verdict_names_its_method(worker: SymbolicWorker) -> None:
    assert equivalent("42", "42").method == "exact"
    assert equivalent("0.5", "1/2", worker=worker).method == "numeric"
    assert equivalent("(n+1)^2", "n^2+2n+1", worker=worker).method == "symbolic"
    assert equivalent("\\{2, 1\\}", "\\{1, 2\\}", worker=worker).method == "set"
    assert equivalent("[0, 1)", "[0,1)", worker=worker).method == "exact"
    assert equivalent("[0, 2)", "[0,1)", worker=worker).method == "interval"
    undecided = equivalent("even n", "odd n", worker=worker)
    assert undecided.method == "undecided" and undecided.detail


def test_a_hanging_check_is_cut_off(worker: SymbolicWorker) -> None:
    started = time.monotonic()
    verdict = equivalent("(2x+2y+2z)^{300}", "2^{300}(x+y+z)^{300}", timeout=0.5, worker=worker)
    assert time.monotonic() - started < 3.0
    assert verdict.equal is None and "exceeded" in verdict.detail
    assert equivalent("(n+1)^2", "n^2+2n+1", worker=worker).equal is True  # helper restarted


def test_injected_code_is_never_run(worker: SymbolicWorker, tmp_path: Path) -> None:
    target = tmp_path / "pwned"
    evil = f"__import__('pathlib').Path({str(target)!r}).touch()"
    assert equivalent(evil, "1", worker=worker).equal is not True
    assert not target.exists()


def test_huge_or_deeply_nested_answers_are_undecided(worker: SymbolicWorker) -> None:
    assert equivalent("(" * 900 + "1" + ")" * 900, "1", worker=worker).equal in (True, None)
    assert equivalent("1" * 6000, "1", worker=worker).equal is None


@pytest.mark.parametrize(("text", "answer"), [
    ("so the total is \\boxed{12}.", "12"),
    ("first \\boxed{3}, corrected: \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
    ("\\boxed{\\{1, \\{2\\}\\}}", "\\{1, \\{2\\}\\}"),
    ("work...\nAnswer: 17\n", "17"),
    ("work\n**Answer:** $n = 4k+3$", "$n = 4k+3$"),
    ("Final answer: 5\nmore text", "5"),
    ("**Final Answer:**\n\n$x = 2$\n", "$x = 2$"),
    ("Answer: 1\n...\nAnswer: 2", "2"),
    ("no answer given here", None),
])
def test_extract_answer(text: str, answer: str | None) -> None:
    assert extract_answer(text) == answer


# ---- IMO-AnswerBench -------------------------------------------------------------------


def answerbench_keys() -> list[str]:
    if not ANSWERBENCH.exists():
        pytest.skip("IMO-AnswerBench data not present")
    with ANSWERBENCH.open(newline="") as f:
        return [row["Short Answer"] for row in csv.DictReader(f)]


def rewrites(key: str) -> list[str]:
    """Ways a solver might write the same answer."""
    bare = key.strip().strip("$").strip().rstrip(".")
    forms = [f"${bare}$", f"\\boxed{{{bare}}}", f"Answer: {key}", f"  {key}  ",
             f"**Answer:** ${bare}$", re.sub(r",\s*", ", ", bare)]
    if "\\frac" in bare:
        forms.append(bare.replace("\\frac", "\\dfrac"))
    parts = [p.strip() for p in bare.split(",")]
    if len(parts) > 1 and all(re.fullmatch(r"-?\d+", p) for p in parts):
        forms.append(", ".join(reversed(parts)))
        forms.append("\\{" + ", ".join(reversed(parts)) + "\\}")
    return forms


@pytest.mark.needs_data
def test_answerbench_keys_equal_themselves_and_a_rewrite(worker: SymbolicWorker) -> None:
    keys = answerbench_keys()
    assert len(keys) == 400
    failures = []
    for key in keys:
        if equivalent(key, key, worker=worker).equal is not True:
            failures.append(("self", key))
        if not any(equivalent(form, key, worker=worker).equal for form in rewrites(key)):
            failures.append(("rewrite", key))
    assert failures == []


def numeric_value(key: str) -> Fraction | None:
    text = clean(key).replace(" ", "")
    if re.fullmatch(r"-?\d+(?:\.\d+)?", text):
        return Fraction(text)
    if m := re.fullmatch(r"(-?)\\frac\{(\d+)\}\{(\d+)\}", text):
        return Fraction(int(m[2]), int(m[3])) * (-1 if m[1] else 1)
    return None


# Keys that differ in writing but not in value: never counted as false positives.
SAME_VALUE = {frozenset({"$g(n)=n - 1$", "$n-1$"})}


def clearly_different(a: str, b: str) -> bool:
    va, vb = numeric_value(a), numeric_value(b)
    return (clean(a).replace(" ", "") != clean(b).replace(" ", "")
            and (va is None or vb is None or va != vb) and frozenset({a, b}) not in SAME_VALUE)


def judge_pairs(pairs: list[tuple[str, str]], worker: SymbolicWorker) -> list[tuple]:
    """False positives among `pairs`; prints how many were decided."""
    decided: dict[bool | None, int] = {True: 0, False: 0, None: 0}
    false_positives = []
    for a, b in pairs:
        verdict: Verdict = equivalent(a, b, worker=worker)
        decided[verdict.equal] += 1
        if verdict.equal:
            false_positives.append((a, b, verdict))
    print(f"\n{len(pairs)} different keys: {decided[False]} unequal, {decided[None]} undecided")
    return false_positives


@pytest.mark.needs_data
def test_answerbench_sampled_different_keys_never_equal(worker: SymbolicWorker) -> None:
    keys = sorted(set(answerbench_keys()))
    rng = random.Random(4)
    pairs: set[tuple[str, str]] = set()
    while len(pairs) < 2000:
        a, b = rng.sample(keys, 2)
        if clearly_different(a, b):
            pairs.add((a, b))
    assert judge_pairs(sorted(pairs), worker) == []


@pytest.mark.needs_data
@pytest.mark.slow
def test_answerbench_all_different_keys_never_equal(worker: SymbolicWorker) -> None:
    keys = sorted(set(answerbench_keys()))
    pairs = [(a, b) for a, b in itertools.combinations(keys, 2) if clearly_different(a, b)]
    assert judge_pairs(pairs, worker) == []
