"""The experiment's report as Markdown or HTML: the same blocks (headings, paragraphs,
tables) for both; HTML adds a plot of score against tokens, drawn by matplotlib (the
`report` extra; without it the page says how to install it)."""

from __future__ import annotations

import html
import io
import json

INSTALL = "the plot needs matplotlib: pip install 'gitswarm[report]'"


def to_json(data: dict) -> str:
    return json.dumps(data, indent=2) + "\n"


def blocks(data: dict) -> list[tuple]:
    """The report as ("h", text), ("p", text), ("table", headers, rows) and ("plot",) blocks
    (the plot is the HTML report's alone)."""
    arms = data["arms"]
    out: list[tuple] = [("h", f"Experiment {data['experiment']}"),
                        ("p", f"Problems {data['problems']}, model {data['model']}, baseline {data['baseline']}; "
                              f"spec {data['spec']}, runs in {data['folder']}.")]
    out += [("p", note) for note in data["notes"]]
    out += [("h", "Arms"), ("table", ["arm", "settings", "runs finished", "solved", "mean score", "tokens",
                                      "tokens per solved", "USD", "USD per solved", "wall time"],
                            [[a["arm"], _settings(a["settings"]), f"{a['finished']} of {a['runs']}",
                              f"{a['solved']} of {a['scores']}", _num(a["mean_score"], 3), str(a["tokens"]),
                              _num(a["tokens_per_solved"], 0), _usd(a["cost_usd"]),
                              _usd(a["usd_per_solved"]) if a["solved"] else "-", f"{a['wall_seconds']:.1f} s"]
                             for a in arms]),
            ("p", data["definitions"]["scores"]), ("plot",)]
    out += [("h", f"Against the baseline ({data['baseline']})")]
    out += [("p", c["sentence"]) for c in data["comparisons"]] or [("p", "Only one arm: nothing to compare.")]
    if data["comparisons"]:
        out.append(("table", ["arm", "pairs", "mean difference", "95% CI", "within the noise",
                              "solved only by the arm", f"solved only by {data['baseline']}", "pairs left out"],
                    [[c["arm"], str(c["pairs"]), _num(c["mean_difference"], 3, sign=True), _ci(c["ci95"]),
                      "yes" if c["within_noise"] else "no", str(c["solved_only_by_arm"]),
                      str(c["solved_only_by_baseline"]), str(c["pairs_left_out"])] for c in data["comparisons"]]))
    if data.get("by_kind"):
        out += [("p", "The same comparison within each problem kind:"),
                ("table", ["arm", "kind", "pairs", "mean difference", "95% CI", "within the noise"],
                 [[c["arm"], c["kind"], str(c["pairs"]), _num(c["mean_difference"], 3, sign=True), _ci(c["ci95"]),
                   "yes" if c["within_noise"] else "no"] for c in data["by_kind"]])]
    out += _selectors(arms)
    kinds = list(dict.fromkeys(k for a in arms for k in a["outcomes"]))
    out += [("h", "Episodes by outcome"),
            ("table", ["arm", "episodes", *kinds], [[a["arm"], str(a["episodes"]),
                                                     *(str(a["outcomes"].get(k, 0)) for k in kinds)] for a in arms]),
            ("h", "Compounding"),
            ("table", ["arm", "contributions", "citing", "built on", "in ancestry"],
             [[a["arm"], str(a["contributions"]), _pct(a.get("citation_rate")), _pct(a["built_on_share"]),
               _pct(a["ancestry_share"])] for a in arms]),
            ("p", data["definitions"]["compounding"]),
            ("h", "Runs"), _runs(data),
            ("p", f"Spent by the experiment, every run listed: {data['spent']['tokens']} tokens, "
                  f"{_usd(data['spent']['cost_usd'])} USD.")]
    return out


def _selectors(arms: list[dict]) -> list[tuple]:
    """Each arm's selection and reviews against the referee (the run report's figures, summed)."""
    rows = [[a["arm"], s["reviewer"] or "-", f"{s['graded']} of {s['candidates']}",
             f"{s['picked_best']} of {s['selected']}", f"{s['critical_confirmed']} of {s['critical']}",
             f"{s['false_passes']} of {s['passes']}"] for a in arms if (s := a.get("selector"))]
    if not rows:
        return []
    return [("h", "Selection and reviews against the referee"),
            ("table", ["arm", "reviewer", "candidates graded", "picked a best-graded", "critical confirmed",
                       "false passes"], rows),
            ("p", "Per arm, over its finished runs: how often the selection picked a best-graded candidate (of "
                  "the problems whose selected candidate is graded), how many critical reviews the referee "
                  "confirms, and how many passes it contradicts. The experiment grades every candidate of "
                  "the problems graded without a model (answers, programs); of proofs, the selected ones.")]


def _runs(data: dict) -> tuple:
    """The runs table; under equal tokens, with each run's pass and whether it stands for its arm."""
    two = data.get("equal_spend") is not None
    headers = ["run", *(["pass", "stands"] if two else []), "state", "stop", "solved", "episodes", "tokens",
               "USD", "wall time", "largest episode (tokens)"]
    rows = [[r["name"], *([str(r["pass"]), "yes" if r["stands"] else "no"] if two else []), r["state"],
             r["reason"] or "-", f"{r['solved']} of {len(r['scores'])}", str(r["episodes"]), str(r["tokens"]),
             _usd(r["cost_usd"]), f"{r['wall_seconds']:.1f} s", str(r["largest_episode_tokens"])]
            for r in data["runs"]]
    return ("table", headers, rows)


def to_markdown(data: dict) -> str:
    lines: list[str] = []
    for block in blocks(data):
        if block[0] == "h":
            lines += [f"{'#' if not lines else '##'} {block[1]}", ""]
        elif block[0] == "p":
            lines += [block[1], ""]
        elif block[0] == "table":
            _, headers, rows = block
            lines += [_row(headers), _row(["---"] * len(headers)), *(_row(r) for r in rows), ""]
    return "\n".join(lines)


def to_html(data: dict) -> str:
    parts: list[str] = []
    for block in blocks(data):
        if block[0] == "h":
            tag = "h1" if not parts else "h2"
            parts.append(f"<{tag}>{html.escape(block[1])}</{tag}>")
        elif block[0] == "p":
            parts.append(f"<p>{html.escape(block[1])}</p>")
        elif block[0] == "plot":
            parts += ["<h2>Score against tokens</h2>", plot(data)]
        else:
            _, headers, rows = block
            head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
            body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
            parts.append(f"<table><tr>{head}</tr>{body}</table>")
    style = "body{font-family:sans-serif;max-width:72em;margin:auto}td,th{border:1px solid #ccc;padding:2px 6px}"
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(data['experiment'])}</title>"
            f"<style>{style}</style></head><body>{''.join(parts)}</body></html>\n")


def plot(data: dict) -> str:
    """Mean score against tokens spent, one point per finished run that stands for its arm and
    one line per arm (its runs in order of tokens), as inline SVG; or how to install matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return f"<p>No plot: {html.escape(INSTALL)}</p>"
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for arm in data["arms"]:
        points = sorted((r["tokens"], mean) for r in data["runs"]
                        if r["arm"] == arm["arm"] and r["state"] == "finished" and r["stands"]
                        and (mean := _mean(r["scores"])) is not None)
        if points:
            ax.plot([x for x, _ in points], [y for _, y in points], marker="o", label=arm["arm"])
    ax.set_xlabel("tokens spent by the run")
    ax.set_ylabel("mean score of the run")
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=8)
    out = io.StringIO()
    fig.savefig(out, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = out.getvalue()
    return text[text.index("<svg"):]


def _mean(scores: dict) -> float | None:
    graded = [s for s in scores.values() if s is not None]
    return sum(graded) / len(graded) if graded else None


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _settings(settings: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in settings.items()) or "(the spec's [solve])"


def _num(value: float | None, digits: int, sign: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _ci(ci: list | None) -> str:
    return "-" if not ci else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4f}"


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.0f}%"
