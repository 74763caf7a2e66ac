"""Turn public benchmark files (IMO-Bench CSV, GSM8K, any JSONL by a field mapping) into problem files.

Malformed records are reported, never silently shifted (`records.py` checks each CSV record,
`fieldmap.py` each JSONL one); then each record becomes a problem file, or the whole import
is refused.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from gitswarm.errors import BadInput
from gitswarm.problems import frontmatter
from gitswarm.problems.fieldmap import GSM8K, JSONL, FieldMap, read_jsonl
from gitswarm.problems.loader import ID_PATTERN
from gitswarm.problems.records import Record, RowError, csv_records, read_text

FORMATS = ("imo-proofbench", "imo-answerbench", "jsonl", "gsm8k")
MAPPED: dict[str, FieldMap] = {"jsonl": JSONL, "gsm8k": GSM8K}
"""The JSONL formats and their default field mappings."""
Converted = tuple[str, dict[str, object], str]
"""A record as (id from the source, front matter without `id`, statement)."""


@dataclass(frozen=True)
class ImportResult:
    """The problem files written (set.toml not counted) and the records skipped."""

    written: list[Path]
    skipped: list[RowError]
    renamed: dict[str, str] = field(default_factory=dict)
    """Ids of the source that were changed to make file names (`safe_id`): given -> written."""
    without_figure: list[str] = field(default_factory=list)
    """Problems written whose source has a figure the import did not carry."""


class ImportRefused(BadInput):
    """Some records are malformed and on_error is "refuse": nothing was written."""

    def __init__(self, errors: list[RowError]) -> None:
        super().__init__(f"{len(errors)} malformed record(s); nothing was written")
        self.errors = errors


@dataclass(frozen=True)
class _Draft:
    row: int
    id: str
    front: dict[str, object]
    body: str
    given: str
    figure: bool


def import_file(fmt: str, source: Path, out: Path, *, level: str | None = None,
                on_error: Literal["skip", "refuse"] = "refuse", overwrite: bool = False,
                fields: FieldMap | None = None, id_prefix: str | None = None,
                limit: int | None = None) -> ImportResult:
    """Import `source` (one of FORMATS) as `out/<id>.md` files plus `out/set.toml`.

    `level` keeps only the IMO-ProofBench problems of that Level (case-insensitive). `fields`
    replaces a JSONL format's mapping (MAPPED); records without ids are numbered
    `<id_prefix>-0001`, the prefix being `out`'s name by default. `limit` keeps the first N
    records (those after them are not checked). Malformed records raise ImportRefused
    (`on_error="refuse"`) or are returned in `skipped` ("skip"). Existing problem files
    raise FileExistsError unless `overwrite`; nothing is written then.
    """
    _check_options(fmt, on_error, level, fields, id_prefix, limit)
    source, out = Path(source), Path(out)
    text = read_text(source)
    if fmt in MAPPED:
        prefix = safe_id(id_prefix or out.resolve().name)
        records, errors = read_jsonl(text, fields or MAPPED[fmt], prefix)
    else:
        records, errors = csv_records(fmt, text)
    if not records and not errors:
        raise BadInput(f"{source}: no records found: is it the right file?")
    if level is not None:
        records = _filter_level(records, level)
    if limit is not None:
        records, errors = _first(limit, records, errors)
    drafts, id_errors = _drafts(fmt, records, source)
    errors = sorted(errors + id_errors, key=lambda e: e.row)
    if errors and on_error == "refuse":
        raise ImportRefused(errors)
    described = ", ".join(part for part in (fmt, level and f"level {level}", limit and f"first {limit} records")
                          if part)
    written = _write(drafts, out, overwrite, f"Imported from {source.name} ({described})")
    return ImportResult(written, errors, {d.given: d.id for d in drafts if d.given != d.id},
                        [d.id for d in drafts if d.figure])


ID_RULE = "lowercased, and every character other than a-z, 0-9, '.', '_' and '-' made '-'"
"""How `safe_id` changes an id, in the words the import's output uses."""


def safe_id(raw: str) -> str:
    """A file-name-safe id (ID_RULE): lowercase, so that ids differing only in case cannot
    overwrite each other's files on a case-insensitive file system."""
    return re.sub(r"[^a-z0-9._-]", "-", raw.strip().lower())


def _check_options(fmt: str, on_error: str, level: str | None, fields: FieldMap | None,
                   id_prefix: str | None, limit: int | None) -> None:
    """BadInput for an option the format does not take or a value out of range."""
    if fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r}; known formats: {', '.join(FORMATS)}")
    if on_error not in ("skip", "refuse"):
        raise BadInput(f"on_error must be 'skip' or 'refuse', not {on_error!r}")
    if level is not None and fmt != "imo-proofbench":
        raise BadInput("a level filter only applies to the imo-proofbench format")
    if (fields is not None or id_prefix is not None) and fmt not in MAPPED:
        raise BadInput(f"a field mapping and an id prefix only apply to the {' and '.join(MAPPED)} formats")
    if limit is not None and limit < 1:
        raise BadInput(f"a limit must be at least 1, not {limit}")


def _first(limit: int, records: list[Record], errors: list[RowError]) -> tuple[list[Record], list[RowError]]:
    """The records and errors of the first `limit` rows (a malformed row counts as one)."""
    rows = set(sorted({r.row for r in records} | {e.row for e in errors})[:limit])
    return [r for r in records if r.row in rows], [e for e in errors if e.row in rows]


def _filter_level(records: list[Record], level: str) -> list[Record]:
    present = sorted({r.values["Level"] for r in records})
    wanted = level.strip().lower()
    if wanted not in {p.lower() for p in present}:
        raise BadInput(f"no problems at level {level!r}; levels in the file: "
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
    """An answer problem, with the hidden solution when there is one; the source is the
    mapped field (by default `competition`, as MathArena names it) or the file name."""
    front: dict[str, object] = {"title": v["title"] or v["id"], "kind": "answer",
                                "source": v["source"] or source.name, "answer": v["answer"]}
    return v["id"], front | ({"solution": v["solution"]} if v["solution"] else {}), v["problem"]


def _gsm8k(v: dict[str, str], source: Path) -> Converted:
    """A GSM8K problem: as `_jsonl`, its source naming the benchmark and its licence."""
    pid, front, body = _jsonl(v, source)
    return pid, front | {"source": v["source"] or f"GSM8K, {source.name} (MIT)"}, body


CONVERTERS = {"imo-proofbench": _proofbench, "imo-answerbench": _answerbench, "jsonl": _jsonl,
              "gsm8k": _gsm8k}


def _drafts(fmt: str, records: list[Record], source: Path) -> tuple[list[_Draft], list[RowError]]:
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
            drafts[pid] = _Draft(record.row, pid, {"id": pid} | front, body, raw_id.strip(), record.figure)
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
