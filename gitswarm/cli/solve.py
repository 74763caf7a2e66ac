"""`gitswarm solve`: the command's options and checks, then the swarm run by `cli.running`.
Its options that set a `SolveConfig` field are made from the field (`cli.fieldopts`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from gitswarm.cli.common import CompactBy, Effort, Isolation, Reviews, ToolProtocol, fail, user_errors
from gitswarm.cli.fieldopts import field_values, option
from gitswarm.cli.resume import check_resume
from gitswarm.cli.running import RemoteRun, missing_credentials, refuse_busy, run_swarm
from gitswarm.engine.config import EPISODES_PER_CHARGE, SolveConfig
from gitswarm.models.config import DEFAULT_OUTPUT_TOKENS

PersonReviews = Literal["advice", "counts"]
"""gitswarm.engine.config.PersonReviews, spelt out as `cli.common` spells the others."""

RUN, MODEL, BUDGET, VERIFICATION, CONTEXT, OUTPUT, REMOTE, PRICES = (
    "Run", "Model", "Budget and caps", "Verification", "Context of an episode", "Output", "Remote (with --run URL)",
    "Prices")
"""The panels of `solve --help`, in the order they are listed."""

TuiOpt = Annotated[bool | None, typer.Option(
    "--tui/--no-tui", help="Live dashboard (default when stdout is a terminal) or plain progress lines.",
    show_default=False, rich_help_panel=OUTPUT)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print events as JSON lines.", rich_help_panel=OUTPUT)]
ModelOpt = Annotated[str | None, option(
    "model", "litellm model string for the workers, e.g. anthropic/claude-opus-4-8, openai/gpt-5.5, "
    "ollama/llama3 (env GITSWARM_MODEL).", "--model", "-m", envvar="GITSWARM_MODEL", metavar="MODEL",
    rich_help_panel=MODEL)]
SECONDS = {"metavar": "SECONDS"}
"""A time in seconds; 0 passes the option, and a field that must be more says so itself."""
USD = {"metavar": "USD", "rich_help_panel": PRICES}

# The model's options `solve` and `worker` share.
ApiBaseOpt = Annotated[str | None, option(
    "api_base", "OpenAI-compatible server URL (vLLM, llama.cpp, ...); default: the provider's own.",
    metavar="URL", rich_help_panel=MODEL)]
EffortOpt = Annotated[Effort | None, option(
    "reasoning_effort", "Turn the workers' reasoning mode on at this effort (default: the model's own).",
    rich_help_panel=MODEL)]
ReviewerApiBaseOpt = Annotated[str | None, option(
    "reviewer_api_base", "The reviewer model's server URL (default --api-base).", metavar="URL",
    rich_help_panel=MODEL)]
ToolProtocolOpt = Annotated[ToolProtocol | None, option(
    "tool_protocol", "How tools are offered: native function calling, a text protocol, or {default} (default).",
    rich_help_panel=MODEL)]
MaxOutputOpt = Annotated[int | None, option(
    "max_output_tokens", f"Tokens of one reply at most, thinking included (default: the client's, "
    f"{DEFAULT_OUTPUT_TOKENS}).", metavar="TOKENS", rich_help_panel=MODEL)]
IdleTimeoutOpt = Annotated[float | None, option(
    "idle_timeout_s", "Seconds a streamed reply may send nothing before it is cut (default {default}).",
    **SECONDS, rich_help_panel=MODEL)]
ReplyTimeoutOpt = Annotated[float | None, option(
    "reply_timeout_s", "Seconds one reply may take in all (default {default}).", **SECONDS,
    rich_help_panel=MODEL)]
ConcurrentCallsOpt = Annotated[int | None, option(
    "max_concurrent_calls", "Model calls in flight at once (default: no bound). 1 for a server that answers "
    "one request at a time (llama-cpp-python's): a call's reply timeout then starts in its turn, not in the "
    "server's queue.", metavar="N", rich_help_panel=MODEL)]


def solve(
    problems: Annotated[str, typer.Argument(metavar="SET", help="Problem-set folder (or shipped set name).",
                                            show_default=False)],
    run: Annotated[str | None, typer.Option(
        metavar="DIR|URL", rich_help_panel=RUN,
        help="Run repository; default runs/<set>. An existing run is resumed. A git remote URL "
             "(file://, git://, ssh://, https://, user@host:path) makes this process the coordinator of a run "
             "there: workers join it with `gitswarm worker URL`.")] = None,
    workers: Annotated[int | None, option(
        "workers", "Episodes in flight at once (default {default}); with --run URL, this process's own (0: "
                   "coordinate only).", "--workers", min=0, metavar="N", rich_help_panel=RUN)] = None,
    problem: Annotated[list[str] | None, typer.Option(
        metavar="ID", rich_help_panel=RUN, help="Only this problem id (repeatable).")] = None,
    seed: Annotated[int | None, option(
        "seed", "Seed of the scheduler's random choices (default {default}).", metavar="N",
        rich_help_panel=RUN)] = None,
    model: ModelOpt = None,
    merger_model: Annotated[str | None, option(
        "merger_model", "Model for the merger (default --model).", metavar="MODEL", rich_help_panel=MODEL)] = None,
    api_base: ApiBaseOpt = None,
    reasoning_effort: EffortOpt = None,
    merger_reasoning_effort: Annotated[Effort | None, option(
        "merger_reasoning_effort", "The merger's reasoning effort (default: the merger model's own).",
        rich_help_panel=MODEL)] = None,
    reviewer_model: Annotated[str | None, option(
        "reviewer_model", "Model for the review episodes (default --model): each review is then an episode the "
        "scheduler assigns to one candidate, run on this model, and the other episodes write none. Its effort "
        "and prices: reviewer_reasoning_effort, reviewer_price_in_per_mtok and reviewer_price_out_per_mtok in "
        "the config file.", metavar="MODEL", rich_help_panel=MODEL)] = None,
    reviewer_api_base: ReviewerApiBaseOpt = None,
    tool_protocol: ToolProtocolOpt = None,
    max_output_tokens: MaxOutputOpt = None,
    idle_timeout: IdleTimeoutOpt = None,
    reply_timeout: ReplyTimeoutOpt = None,
    max_concurrent_calls: ConcurrentCallsOpt = None,
    budget: Annotated[int | None, option(
        "budget", "Charged episodes (abstaining is free); default {default} per problem.", "--budget", "-B",
        metavar="N", rich_help_panel=BUDGET)] = None,
    max_episodes: Annotated[int | None, option(
        "max_episodes", f"Episodes of any outcome at most, charged or not (default {EPISODES_PER_CHARGE} x "
        "--budget).", metavar="N", rich_help_panel=BUDGET)] = None,
    no_progress: Annotated[int | None, option(
        "no_progress", "A count, not a switch: set a problem aside once N episodes in a row on it abstained or "
        "failed; the run stops when every open problem is set aside (default {default}).", metavar="N",
        rich_help_panel=BUDGET)] = None,
    max_usd: Annotated[float | None, option(
        "max_usd", "Stop before spending more USD than this, failed calls included.", metavar="USD",
        rich_help_panel=BUDGET)] = None,
    max_total_tokens: Annotated[int | None, option(
        "max_total_tokens", "Stop before the run's calls, failed ones included, spend more tokens than this.",
        metavar="TOKENS", rich_help_panel=BUDGET)] = None,
    max_tokens: Annotated[str | None, typer.Option(
        "--max-tokens", hidden=True, help="Refused: say --max-total-tokens or --max-output-tokens.")] = None,
    time_limit: Annotated[float | None, option(
        "time_limit_s", "The run's wall time: past it no episode starts, and those in flight get stop_grace_s "
        "(config file, default {stop_grace_s} s) to finish, then are cut short, keeping their transcripts. "
        "Exit 0.", **SECONDS, rich_help_panel=BUDGET)] = None,
    max_steps: Annotated[int | None, option(
        "max_steps", "Model calls per episode at most (default {default}).", metavar="N",
        rich_help_panel=BUDGET)] = None,
    max_steps_by_kind: Annotated[list[str] | None, option(
        "max_steps_by_kind", "Model calls per episode at most on the problems of one kind, over --max-steps: "
        "KIND=N, e.g. reproduce=300 (repeat for each kind; max_steps_by_kind in set.toml's [defaults] or a "
        "config file's [solve] as a table).", metavar="KIND=N", rich_help_panel=BUDGET)] = None,
    verify: Annotated[int | None, option(
        "verify", "Select an attempt only once K reviews by workers other than its author pass it and none "
        "finds a critical error; a problem settles only on such an attempt. With none verified at the end, "
        "the best reviewed (the fewest critical reviews, then the most passes) is written, marked unverified "
        "(rejected by reviews when it has a critical review). 0: "
        "plain plurality of nominations (default {default}).", metavar="K", rich_help_panel=VERIFICATION)] = None,
    verify_in_row: Annotated[bool, option(
        "verify_in_row", "The K passes must come in a row: a gaps review restarts a candidate's count (a "
        "critical one blocks it in any case; its revision counts from zero).", "--verify-in-row",
        rich_help_panel=VERIFICATION)] = False,
    person_reviews: Annotated[PersonReviews | None, option(
        "person_reviews", "What a person's review (`gitswarm review`) counts for. {default} (default): shown to "
        "the workers and in `show`, not counted. counts: counted toward verification like a worker's; a "
        "person's critical review blocks the candidate.", rich_help_panel=VERIFICATION)] = None,
    from_run: Annotated[Path | None, option(
        "from_run", "A new run's memory begins with this run's main (a run of the same set) for the problems "
        "both have: its notes, lemmas, attempts, codebases and reviews, their commits ancestors of the new "
        "run's first. Budget, ledger and selection are the new run's own. Read when the run is created.",
        "--from", metavar="OLD_RUN", rich_help_panel=RUN)] = None,
    change_rule: Annotated[bool, typer.Option(
        "--change-rule", rich_help_panel=VERIFICATION,
        help="Let a resume change the selection rule (--verify, --verify-in-row, settle_nominations, "
             "--isolation best-of-n) where that changes what the run has decided (a problem settled, verified "
             "or selected): they are decided again under the new rule. Without it such a resume is refused "
             "(exit 2); any other change of settings is said before anything runs.")] = False,
    reviews: Annotated[Reviews | None, option(
        "reviews", "{default} (default): any episode may review, with the memory in view. assigned: each "
        "review is an episode the scheduler assigns to one candidate (on --reviewer-model, which implies it). "
        "blind: assigned, and it reads the statement and the candidate alone, nothing of its author, of "
        "other reviews or of the memory: an independent check.", rich_help_panel=VERIFICATION)] = None,
    isolation: Annotated[Isolation | None, option(
        "isolation", "{default} (default): the swarm, every episode reads the memory. independent: each "
        "episode sees only its problem's statement, as independent sampling does; answers are selected by "
        "majority (self-consistency). best-of-n: such attempts, checked by blind reviews and selected by them "
        "(best-of-N with a verifier; no nominations). The baselines an experiment compares the swarm with.",
        rich_help_panel=VERIFICATION)] = None,
    unconfined: Annotated[bool, option(
        "unconfined", "Where this machine cannot make a sandbox (see `gitswarm doctor`), run the programs of "
        "code problems anyway, UNCONFINED: limits and a fresh uid only, the host's files in view. Named in "
        "the event log, status and the report. Default: such a run is refused.", "--unconfined",
        rich_help_panel=RUN)] = False,
    trim_context: Annotated[bool | None, option(
        "trim_context", "Keep each episode's conversation bounded (default on): old tool outputs become stubs "
        "that say how to get them again, and past --compact-at of the model's window the older steps become "
        "one account. --no-trim-context sends the whole conversation every step.",
        "--trim-context/--no-trim-context", rich_help_panel=CONTEXT)] = None,
    compact_at: Annotated[float | None, option(
        "compact_at", "Share of the model's context window past which an episode compacts its older steps "
        "into an account (default {default}).", metavar="SHARE", max=1, rich_help_panel=CONTEXT)] = None,
    compact_by: Annotated[CompactBy | None, option(
        "compact_by", "Who writes a compaction's account: {default} (default), the episode's model, in one "
        "call charged to it; digest, a line per step, assembled without a call.",
        rich_help_panel=CONTEXT)] = None,
    context_window: Annotated[int | None, option(
        "context_window", "The context window, in tokens, of a model litellm does not know (a local or new "
        "model; default {default}); a known model's is litellm's.", metavar="TOKENS",
        rich_help_panel=CONTEXT)] = None,
    as_json: JsonOpt = False,
    tui: TuiOpt = None,
    mirror: Annotated[Path | None, typer.Option(
        metavar="DIR", rich_help_panel=REMOTE,
        help="The coordinator's local run repository, a mirror of the remote (default runs/remotes/<host and "
             "path of the URL>, e.g. runs/remotes/server-srv-git-imo); its "
             "in-process worker, with --workers, uses <mirror>.worker.")] = None,
    claim_ttl: Annotated[float, typer.Option(
        min=1, metavar="SECONDS", rich_help_panel=REMOTE,
        help="Seconds a worker's claim on an episode holds without renewal; a dead worker's episode runs "
             "again after it.")] = 600.0,
    patience: Annotated[float, typer.Option(
        min=1, metavar="SECONDS", rich_help_panel=REMOTE,
        help="Seconds the coordinator waits with no worker holding or closing a claim before it stops the "
             "run (no_workers, exit 1; the same command resumes).")] = 600.0,
    prune_batch: Annotated[int, typer.Option(
        min=0, metavar="N", rich_help_panel=REMOTE,
        help="Delete from the remote the claim and worker refs of episodes that are merged or refused, "
             "this many episodes at a time, and the rest at the end (0: keep them; main, the ledger, the "
             "notes and the op refs keep the whole history either way).")] = 64,
    price_in: Annotated[float | None, option(
        "price_in_per_mtok", "USD per million input tokens, for a model litellm has no price for.", **USD)] = None,
    price_out: Annotated[float | None, option(
        "price_out_per_mtok", "USD per million output tokens, for a model litellm has no price for.",
        **USD)] = None,
    price_cached_in: Annotated[float | None, option(
        "price_cached_in_per_mtok", "USD per million input tokens read from the cache (default: --price-in).",
        **USD)] = None,
    price_cache_write: Annotated[float | None, option(
        "price_cache_write_per_mtok", "USD per million input tokens written to the cache (default: "
        "--price-in).", **USD)] = None,
) -> None:
    """Run a swarm of agents on a problem set; run the same command again to resume.

    The run's memory is a git repository (default runs/<set>): read it with
    `git -C runs/<set> log --graph --oneline`. Ctrl-C once finishes the episodes in flight;
    twice stops at once (nothing is lost either way).

    Exit 0 when the run ended by its budget, episode cap, token or USD cap, time limit, or
    because every problem is settled; 1 when no progress was made (every open problem set
    aside), the provider kept failing, or a model error no retry can fix; 2 on bad input;
    130 when stopped by Ctrl-C (or q in the dashboard).
    """
    from gitswarm.engine.settings import AMBIGUOUS_MAX_TOKENS, config_file, file_settings, merge
    from gitswarm.remote import urls
    from gitswarm.remote.owner import default_mirror

    given = _given(locals())
    with user_errors():
        if max_tokens is not None:
            raise fail(f"--max-tokens {AMBIGUOUS_MAX_TOKENS}")
        problem_set = _load(problems)
        from_file = file_settings(config_file())
        url = run if run is not None and urls.is_remote(run) else None
        if workers == 0 and url is None:
            raise fail("--workers 0 only makes sense with --run URL (a coordinator with no workers of its own)")
        folder = (mirror or default_mirror(url)) if url is not None else (Path(run) if run is not None else None)
        cfg = merge(problem_set, folder, given, from_file)
        _check(cfg, problem_set)
        check_runnable(problems, cfg, problem_set)
        if url is None:  # a remote run refuses other settings itself (`remote.publish`)
            check_resume(cfg, allowed=change_rule)
    remote = None
    if url is not None:
        remote = RemoteRun(url, cfg.workers if workers is None else workers, claim_ttl, patience, prune_batch)
    raise typer.Exit(run_swarm(cfg, problem_set, as_json, tui=_want_tui(tui, as_json), remote=remote))


def _given(params: dict[str, object]) -> dict[str, object]:
    """The settings `solve`'s options give, by field: a switch left off gives none, so the config
    file's holds, and so does `--workers 0` (a coordinator's own slots); the set and the run
    folder are `merge`'s to place."""
    given = field_values(params)
    unset = {"problems", "run"} | {field for field, value in given.items() if value is False}
    if params["workers"] == 0:
        unset.add("workers")
    return {field: value for field, value in given.items() if field not in unset}


def _check(cfg: SolveConfig, problem_set) -> None:
    """What `solve` refuses before the models load: a busy run, code problems without a sandbox,
    missing credentials, a USD cap on a model with no price."""
    from gitswarm.models import credentials

    refuse_busy(cfg.run)
    confine(cfg, problem_set, "--unconfined")
    models = cfg.models  # a bad combination of prices is refused here
    hint = missing_credentials(models)
    if hint:
        raise fail(hint)
    unpriced = list(dict.fromkeys(c.model for c in models.each if not credentials.has_price(c)))
    if cfg.max_usd is not None and unpriced:
        raise fail(f"--max-usd cannot be enforced: litellm has no price for {' or '.join(unpriced)}. Give "
                   "--price-in and --price-out (USD per million tokens; they price the workers' model, and "
                   "the merger's when it is the same; the reviewer's are reviewer_price_in_per_mtok and "
                   "reviewer_price_out_per_mtok in the config file), or use --max-total-tokens.")


def check_runnable(name: str, cfg: SolveConfig, problem_set) -> None:
    """The set's checks that need no model, as `gitswarm problems check` runs them, on the
    problems this run takes: a reproduce problem whose reference does not build, fails its own
    tests or whose tests an empty program passes is refused here (exit 2) before anything is
    spent, rather than left for the agents to find out. Where no sandbox confines the programs
    (`--unconfined`), the references are not built here: the engine's own build says so."""
    from gitswarm.cli.problems import run_checks
    from gitswarm.problems.model import Kind
    from gitswarm.referee.builds import COMPILE_TIMEOUT
    from gitswarm.sandbox import containment

    taken = [p for p in problem_set.problems if (not cfg.problem_ids or p.id in cfg.problem_ids)
             and p.kind is Kind.REPRODUCE]
    if not taken or containment().backend is None:
        return
    defects = run_checks(taken, COMPILE_TIMEOUT)
    for defect in defects:
        typer.echo(str(defect), err=True)
    if defects:
        raise fail(f"{len(defects)} defect(s) in {name} (`gitswarm problems check {name}` reports the same); "
                   "fix them and run the command again: nothing was spent")


def confine(cfg, problem_set, option: str | None = None) -> None:
    """Fail closed: a run with code problems needs a sandbox here, or the user's --unconfined
    (`option`: the command's own, None for a command without one, which is then not named)."""
    from gitswarm.engine.context import CODE_KINDS
    from gitswarm.errors import EnvironmentFault
    from gitswarm.sandbox import containment, permit_unconfined

    code = [p.id for p in problem_set.problems if p.kind in CODE_KINDS
            and (not cfg.problem_ids or p.id in cfg.problem_ids)]
    in_images(problem_set.problems, set(code))
    if not code or (found := containment()).backend is not None:
        return
    if found.disk_full:
        raise EnvironmentFault(found.problem())
    if not cfg.unconfined:
        fix = (f"or give {option} to run their programs without a sandbox (they would see this machine's files)"
               if option else "")
        raise EnvironmentFault(f"refusing the code problems {', '.join(code[:5])}: {found.problem()}", fix=fix)
    permit_unconfined()


def in_images(problems, chosen: set[str]) -> None:
    """Fail closed: a problem that names an image needs a container engine here and the image
    on it (never the host's root instead)."""
    from gitswarm.errors import EnvironmentFault
    from gitswarm.sandbox.container import image
    from gitswarm.sandbox.engines import EngineError, found

    named = [p for p in problems if p.id in chosen and p.image]
    if named and found().engine is None:
        raise EnvironmentFault(f"refusing {', '.join(p.id for p in named[:5])}: their programs run in container "
                               f"images, and {found().problem()}")
    for problem in named:
        for wanted in dict.fromkeys(i for i in (problem.image, problem.grading_image) if i):
            try:
                image(wanted)
            except EngineError as exc:
                raise EnvironmentFault(f"refusing {problem.id}: {exc}") from None


def _want_tui(tui: bool | None, as_json: bool) -> bool:
    """The dashboard when asked, else when stdout is a terminal and no JSON is wanted."""
    return tui if tui is not None else (sys.stdout.isatty() and not as_json)


def _load(problems: str):
    from gitswarm.problems.loader import ProblemSetError, load_set
    from gitswarm.resources import find_set

    try:
        return load_set(find_set(problems))
    except ProblemSetError as exc:
        for defect in exc.defects:
            typer.echo(str(defect), err=True)
        raise fail(f"the problem set {problems} has {len(exc.defects)} defect(s)") from None


def _config(problem_set, model: str | None, run: Path | None, from_file: dict | None = None, /, **options):
    from gitswarm.engine.settings import merge

    return merge(problem_set, run, {"model": model, **options}, from_file or {})
