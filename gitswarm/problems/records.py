"""Read the records of a CSV benchmark file, checking each one's structure.

A missing quote makes the csv module merge or split fields (IMO-AnswerBench v2, row
imo-bench-algebra-036, loses the closing quote of its Problem, so the answer lands inside the
Problem and the record has 5 fields, not 6); every CSV record passes the checks of `_defects`
before it becomes a problem, so nothing is ever silently shifted.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from gitswarm.errors import BadInput

COLUMNS = {
    "imo-proofbench": ("Problem ID", "Problem", "Solution", "Grading guidelines", "Category",
                       "Level", "Short Answer", "Source"),
    "imo-answerbench": ("Problem ID", "Problem", "Short Answer", "Category", "Subcategory",
                        "Source"),
}
REQUIRED = {
    "imo-proofbench": ("Problem ID", "Problem", "Category", "Level", "Source"),
    "imo-answerbench": ("Problem ID", "Problem", "Short Answer", "Category", "Source"),
}


@dataclass(frozen=True)
class RowError:
    """A record that was not imported: its 1-based record number, its id if known, and why."""

    row: int
    problem_id: str | None
    message: str

    def __str__(self) -> str:
        name = f" ({self.problem_id})" if self.problem_id else ""
        return f"row {self.row}{name}: {self.message}"


@dataclass(frozen=True)
class Record:
    """A well-formed record: its 1-based record number and its fields as text."""

    row: int
    values: dict[str, str]
    figure: bool = False
    """The source says the problem comes with a figure (an image) that the record does not hold."""


def read_text(source: Path) -> str:
    """The file's text; a file that is not UTF-8 is BadInput naming the line."""
    raw = source.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise BadInput(f"{source}:{line}: not UTF-8 text: save the file as UTF-8") from None


def csv_records(fmt: str, text: str) -> tuple[list[Record], list[RowError]]:
    """The checked records of an IMO-Bench CSV text (`fmt` one of COLUMNS)."""
    return _csv_records(text, COLUMNS[fmt], REQUIRED[fmt])


def _csv_records(text: str, columns: tuple[str, ...],
                 required: tuple[str, ...]) -> tuple[list[Record], list[RowError]]:
    """Parse leniently (a strict parser stops at the first bad quote), then check each record.

    Rows count the header as row 1, like a spreadsheet; messages also give the file line.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [name.strip() for name in next(reader, [])]
    missing = [c for c in columns if c not in header]
    if missing:
        raise BadInput(f"missing column(s) {', '.join(missing)}; found: {', '.join(header)}")
    raw: list[tuple[int, int, list[str]]] = []
    first_line = reader.line_num + 1
    for row, fields in enumerate(reader, start=2):
        if fields:
            raw.append((row, first_line, fields))
        first_line = reader.line_num + 1
    at = header.index("Category")
    categories = {f[at].strip() for _, _, f in raw if len(f) == len(header)} - {""}
    records: list[Record] = []
    errors: list[RowError] = []
    for row, line, fields in raw:
        record_errors = _check_record(row, line, fields, header, required, categories)
        if record_errors:
            errors += record_errors
        else:
            records.append(Record(row, _values(header, fields)))
    return records, errors


def _check_record(row: int, line: int, fields: list[str], header: list[str],
                  required: tuple[str, ...], categories: set[str]) -> list[RowError]:
    """The errors of one CSV record: its own defects, plus one per record it swallowed."""
    own_id = fields[0].strip() or None
    defects = _defects(fields, header, required, categories)
    swallowed = _swallowed_ids(fields, own_id or "")
    if swallowed:
        defects.append(f"it contains the start of record(s) {', '.join(swallowed)}")
    if not defects:
        return []
    errors = [RowError(row, own_id, f"line {line}: {'; '.join(defects)}: fix the quoting or "
                       "the fields of this record in the source file")]
    return errors + [RowError(row, sid, f"swallowed by record {own_id} at line {line} through a "
                              "quoting error: fix the quotes there") for sid in swallowed]


def _defects(fields: list[str], header: list[str], required: tuple[str, ...],
             categories: set[str]) -> list[str]:
    """Structural defects of a CSV record; any one means its fields cannot be trusted.

    - a field count other than the header's: quotes merged or split fields;
    - an empty required field (Source is last, so it is empty when fields shift left);
    - a Problem ID with a line break: text shifted into the id column;
    - a Short Answer equal to a Category name: the fields shifted left by one.
    """
    if len(fields) != len(header):
        return [f"{len(fields)} fields instead of {len(header)}{_quote_hint(fields, header)}"]
    values = _values(header, fields)
    found = [f"empty {name}" for name in required if not values[name]]
    if "\n" in values["Problem ID"]:
        found.append(f"Problem ID {values['Problem ID'][:40]!r} spans several lines")
    if values["Short Answer"] in categories:
        found.append(f"Short Answer {values['Short Answer']!r} is a Category name")
    return found


def _values(header: list[str], fields: list[str]) -> dict[str, str]:
    return dict(zip(header, (field.strip() for field in fields), strict=True))


def _quote_hint(fields: list[str], header: list[str]) -> str:
    """Point at a field holding a line that starts with ',': a field boundary inside quotes."""
    for name, field in zip(header, fields, strict=False):
        if re.search(r"\n\s*,", field):
            return f" ({name} has a line starting with ',': its closing quote is probably missing)"
    return ""


def _swallowed_ids(fields: list[str], own_id: str) -> list[str]:
    """Ids of records swallowed into a field: a line inside it starting like `<id>,`.

    The id shape comes from the record's own id (letter runs and digit runs generalised, e.g.
    `imo-bench-algebra-036` -> `[A-Za-z_]+-[A-Za-z_]+-[A-Za-z_]+-[0-9]+`), so a formula line
    such as `x-1,` does not match. Ids without both letters and digits are not checked.
    """
    if not (re.search(r"[A-Za-z]", own_id) and re.search(r"\d", own_id)):
        return []
    shape = "".join("[A-Za-z_]+" if part[0].isalpha() or part[0] == "_" else
                    "[0-9]+" if part[0].isdigit() else re.escape(part)
                    for part in re.findall(r"[A-Za-z_]+|\d+|[^A-Za-z_\d]", own_id))
    pattern = re.compile(rf'\n"?({shape})"?,')
    return [m.group(1) for field in fields for m in pattern.finditer(field)]
