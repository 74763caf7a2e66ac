"""Turn public benchmark files (IMO-Bench CSV, `id, problem, answer` JSONL) into problem files.

Malformed records are reported, never silently shifted. A missing quote makes the csv module
merge or split fields (IMO-AnswerBench v2, row imo-bench-algebra-036, loses the closing quote
of its Problem, so the answer lands inside the Problem and the record has 5 fields, not 6),
so every CSV record passes structural checks before it becomes a problem; see `_defects`.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gitswarm.problems import frontmatter
from gitswarm.problems.loader import ID_PATTERN

FORMATS = ("imo-proofbench", "imo-answerbench", "jsonl")
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
JSONL_KEYS = ("id", "problem", "answer")

Converted = tuple[str, dict[str, object], str]
"""A record as (id from the source, front matter without `id`, statement)."""


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
class ImportResult:
    """The problem files written (set.toml not counted) and the records skipped."""

    written: list[Path]
    skipped: list[RowError]


class ImportRefused(Exception):
    """Some records are malformed and on_error is "refuse": nothing was written."""

    def __init__(self, errors: list[RowError]) -> None:
        super().__init__(f"{len(errors)} malformed record(s); nothing was written")
        self.errors = errors


@dataclass(frozen=True)
class _Record:
    row: int
    values: dict[str, str]


@dataclass(frozen=True)
class _Draft:
    row: int
    id: str
    front: dict[str, object]
    body: str


def import_file(fmt: str, source: Path, out: Path, *, level: str | None = None,
                on_error: Literal["skip", "refuse"] = "refuse",
                overwrite: bool = False) -> ImportResult:
    """Import `source` (one of FORMATS) as `out/<id>.md` files plus `out/set.toml`.

    `level` keeps only the IMO-ProofBench problems of that Level (case-insensitive). Malformed
    records raise ImportRefused (`on_error="refuse"`) or are returned in `skipped` ("skip").
    Existing problem files raise FileExistsError unless `overwrite`; nothing is written then.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known formats: {', '.join(FORMATS)}")
    if on_error not in ("skip", "refuse"):
        raise ValueError(f"on_error must be 'skip' or 'refuse', not {on_error!r}")
    if level is not None and fmt != "imo-proofbench":
        raise ValueError("a level filter only applies to the imo-proofbench format")
    source, out = Path(source), Path(out)
    records, errors = _read_records(fmt, source)
    if level is not None:
        records = _filter_level(records, level)
    drafts, id_errors = _drafts(fmt, records, source)
    errors = sorted(errors + id_errors, key=lambda e: e.row)
    if errors and on_error == "refuse":
        raise ImportRefused(errors)
    described = f"{fmt}, level {level}" if level else fmt
    written = _write(drafts, out, overwrite, f"Imported from {source.name} ({described})")
    return ImportResult(written, errors)


def safe_id(raw: str) -> str:
    """A file-name-safe id: lowercase, every character outside [a-z0-9._-] replaced by '-'."""
    return re.sub(r"[^a-z0-9._-]", "-", raw.strip().lower())


def _read_records(fmt: str, source: Path) -> tuple[list[_Record], list[RowError]]:
    raw = source.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ValueError(f"{source}:{line}: not UTF-8 text: save the file as UTF-8") from None
    if fmt == "jsonl":
        records, errors = _jsonl_records(text)
    else:
        records, errors = _csv_records(text, COLUMNS[fmt], REQUIRED[fmt])
    if not records and not errors:
        raise ValueError(f"{source}: no records found: is it the right file?")
    return records, errors


def _csv_records(text: str, columns: tuple[str, ...],
                 required: tuple[str, ...]) -> tuple[list[_Record], list[RowError]]:
    """Parse leniently (a strict parser stops at the first bad quote), then check each record.

    Rows count the header as row 1, like a spreadsheet; messages also give the file line.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [name.strip() for name in next(reader, [])]
    missing = [c for c in columns if c not in header]
    if missing:
        raise ValueError(f"missing column(s) {', '.join(missing)}; found: {', '.join(header)}")
    raw: list[tuple[int, int, list[str]]] = []
    first_line = reader.line_num + 1
    for row, fields in enumerate(reader, start=2):
        if fields:
            raw.append((row, first_line, fields))
        first_line = reader.line_num + 1
    at = header.index("Category")
    categories = {f[at].strip() for _, _, f in raw if len(f) == len(header)} - {""}
    records: list[_Record] = []
    errors: list[RowError] = []
    for row, line, fields in raw:
        record_errors = _check_record(row, line, fields, header, required, categories)
        if record_errors:
            errors += record_errors
        else:
            records.append(_Record(row, _values(header, fields)))
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


def _jsonl_records(text: str) -> tuple[list[_Record], list[RowError]]:
    """One object per line; blank lines are ignored; rows are line numbers."""
    records: list[_Record] = []
    errors: list[RowError] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        values, message = _jsonl_values(line)
        if message:
            errors.append(RowError(number, values.get("id") or None, message))
        else:
            records.append(_Record(number, values))
    return records, errors


def _jsonl_values(line: str) -> tuple[dict[str, str], str | None]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return {}, f"invalid JSON ({exc.msg} at column {exc.colno}): fix or remove the line"
    if not isinstance(obj, dict):
        return {}, 'not a JSON object: write {"id": ..., "problem": ..., "answer": ...}'
    values = {key: _text(obj.get(key)) for key in (*JSONL_KEYS, "competition")}
    missing = [key for key in JSONL_KEYS if not values[key]]
    if missing:
        return values, (f"missing or empty {', '.join(missing)}: each line needs id, problem "
                        "and answer as text (id and answer may be integers)")
    return values, None


def _text(value: object) -> str:
    if isinstance(value, str):
        return value.strip()
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else ""


def _filter_level(records: list[_Record], level: str) -> list[_Record]:
    present = sorted({r.values["Level"] for r in records})
    wanted = level.strip().lower()
    if wanted not in {p.lower() for p in present}:
        raise ValueError(f"no problems at level {level!r}; levels in the file: "
                         f"{', '.join(present)}")
    return [r for r in records if r.values["Level"].lower() == wanted]


def _proofbench(v: dict[str, str], source: Path) -> Converted:
    """A proof problem; solution, grading and a non-empty Short Answer are hidden."""
    front: dict[str, object] = {
        "title": f"{v['Problem ID']} ({v['Category']}, {v['Level']})", "kind": "proof",
        "source": f"{v['Source']} (IMO-ProofBench, CC-BY-4.0)"}
    hidden = {"answer": v["Short Answer"], "solution": v["Solution"],
              "grading": v["Grading guidelines"]}
    return v["Problem ID"], front | {k: t for k, t in hidden.items() if t}, v["Problem"]


def _answerbench(v: dict[str, str], source: Path) -> Converted:
    """An answer problem; the Short Answer is the hidden answer key."""
    labels = ", ".join(label for label in (v["Category"], v["Subcategory"]) if label)
    front: dict[str, object] = {
        "title": f"{v['Problem ID']} ({labels})", "kind": "answer",
        "source": f"{v['Source']} (IMO-AnswerBench, CC-BY-4.0)", "answer": v["Short Answer"]}
    return v["Problem ID"], front, v["Problem"]


def _jsonl(v: dict[str, str], source: Path) -> Converted:
    """An answer problem; the source is the `competition` field (MathArena) or the file name."""
    front: dict[str, object] = {"title": v["id"], "kind": "answer",
                                "source": v["competition"] or source.name, "answer": v["answer"]}
    return v["id"], front, v["problem"]


CONVERTERS = {"imo-proofbench": _proofbench, "imo-answerbench": _answerbench, "jsonl": _jsonl}


def _drafts(fmt: str, records: list[_Record], source: Path) -> tuple[list[_Draft], list[RowError]]:
    """Problems ready to write; an id that is unsafe or taken by an earlier row is an error."""
    drafts: dict[str, _Draft] = {}
    errors: list[RowError] = []
    for record in records:
        raw_id, front, body = CONVERTERS[fmt](record.values, source)
        pid = safe_id(raw_id)
        if not ID_PATTERN.match(pid) or ".." in pid:
            errors.append(RowError(record.row, raw_id, f"id {raw_id!r} makes no safe file name: "
                                   "start it with a letter or digit; at most 80 characters"))
        elif pid in drafts:
            errors.append(RowError(record.row, raw_id, f"id {raw_id!r} becomes {pid!r}, already "
                                   f"used by row {drafts[pid].row}: give each problem its own id"))
        else:
            drafts[pid] = _Draft(record.row, pid, {"id": pid} | front, body)
    return list(drafts.values()), errors


def _write(drafts: list[_Draft], out: Path, overwrite: bool, description: str) -> list[Path]:
    """Write the problem files and set.toml; an existing set.toml is kept unless `overwrite`."""
    targets = [out / f"{draft.id}.md" for draft in drafts]
    existing = [path for path in targets if path.exists()]
    if existing and not overwrite:
        more = f" (and {len(existing) - 1} more)" if len(existing) > 1 else ""
        raise FileExistsError(f"{existing[0]} already exists{more}: allow overwriting, "
                              "or import into another folder")
    if not drafts:
        return []
    out.mkdir(parents=True, exist_ok=True)
    for draft, path in zip(drafts, targets, strict=True):
        path.write_text(frontmatter.render(draft.front, draft.body), encoding="utf-8")
    set_toml = out / "set.toml"
    if overwrite or not set_toml.exists():
        name = out.resolve().name
        set_toml.write_text(f"name = {json.dumps(name)}\ndescription = {json.dumps(description)}\n",
                            encoding="utf-8")
    return targets
