"""Read pytest's JUnit XML report: each test case's full name, status, message and location."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

STATUSES = {"failure": "failure", "error": "error", "skipped": "skipped"}
"""JUnit child tags and the status each means; a case without one passed."""


@dataclass(frozen=True)
class Case:
    """One test case: `name` is classname + "." + name, as ProgramBench lists tests."""

    name: str
    status: str
    """passed, failure, error or skipped (the harness's words)."""
    message: str = ""
    file: str = ""
    """The test file relative to pytest's rootdir (xunit1 reports only)."""
    line: int | None = None
    """1-based line of the test's definition (xunit1 reports only)."""
    time: float = 0.0
    parts: tuple[str, str] = ("", "")
    """The classname and the test's own name, as the report gives them."""


def read_cases(data: bytes) -> list[Case] | None:
    """Every test case of a report, or None when the report is not XML (cut short)."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        return None
    return [_case(element) for element in root.iter("testcase")]


def _case(element: ET.Element) -> Case:
    classname, name = element.get("classname", ""), element.get("name", "")
    status, message = "passed", ""
    for tag, meaning in STATUSES.items():
        found = element.find(tag)
        if found is not None:
            status, message = meaning, (found.get("message") or found.text or "")[:500]
            break
    line = element.get("line")
    return Case(".".join(p for p in (classname, name) if p), status, message, element.get("file", ""),
                int(line) + 1 if line and line.isdigit() else None, _float(element.get("time")), (classname, name))


def _float(text: str | None) -> float:
    try:
        return float(text or 0)
    except ValueError:
        return 0.0
