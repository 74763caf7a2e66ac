"""The settings of one run (and of grading it); the CLI merges file, environment and flags
into these models (gitswarm.engine.settings)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from pydantic import BaseModel, Field, TypeAdapter, ValidationError, ValidationInfo, model_validator

from gitswarm.domain.rule import SETTLE_NOMINATIONS, VERIFY, Rule
from gitswarm.engine.modelsettings import ModelSettings
from gitswarm.models.config import ModelConfig, ReasoningEffort, ToolProtocol

if TYPE_CHECKING:
    from gitswarm.problems.model import ProblemSet

Isolation = Literal["shared", "independent", "best-of-n"]
"""What an episode sees of the memory, and how a problem is decided (`SolveConfig.isolation`)."""
KindName = Literal["proof", "answer", "program", "reproduce"]
"""A problem kind's name (`problems.model.Kind`), as settings by kind are keyed."""
Reviews = Literal["open", "assigned", "blind"]
"""Who writes reviews and what they see (`SolveConfig.reviews`)."""
PersonReviews = Literal["advice", "counts"]
"""What a person's review counts for (`SolveConfig.person_reviews`)."""
CompactBy = Literal["model", "digest"]
"""Who writes the account of a compacted episode (`SolveConfig.compact_by`)."""

ACROSS_PROCESSES = "slots across processes"
"""Validation context key: the settings are one process's of a run on a remote, whose rule that
K reviews need K + 1 workers holds across every process, not in this one alone."""
BUDGET_PER_PROBLEM = 8
"""The budget's default: this many charged episodes per problem of the set. A `SolveConfig` built
for a set (`SolveConfig.for_set`, which `settings.merge` uses) gets this many times its problems;
one built without a set (a check of settings, a test of one part) gets one problem's worth."""
EPISODES_PER_CHARGE = 3
"""The episode cap's default: this many episodes, of any outcome, per budgeted one."""
_COUNT = TypeAdapter(int)
"""A whole number read as a field of type int reads it (`SolveConfig._episode_cap`)."""

Part = Literal["run", "model", "process"]
"""Whose a `SolveConfig` field is, as the field itself declares (`json_schema_extra`):
- `run`: the run's, alike for every process of it; a coordinator publishes every one of them
  and a remote worker takes every one (`remote.publish.settings_of`, `remote.worker.worker_config`);
- `model`: the model a process calls and how it reaches it (`ModelConfig`); each process sets
  its own, never published;
- `process`: this process's own: its folders, its slots, its sandbox, its clock (on a remote the
  coordinator's time limit ends every worker through the stop it publishes)."""
_CLIENT: dict[str, Any] = {f.name: f.default for f in fields(ModelConfig)}
"""The model client's defaults, which are the defaults of the settings it shares with a run's."""
_RUN: dict = {"part": "run"}
_MODEL: dict = {"part": "model"}
_PROCESS: dict = {"part": "process"}


class SolveConfig(BaseModel):
    """Everything `gitswarm solve` needs to know; every field is a CLI option too, and
    declares its `Part` (`part` reads one part's values, `PARTS` names each part's fields)."""

    model_config = {"frozen": True, "extra": "forbid"}

    problems: Path = Field(json_schema_extra=_PROCESS)
    """The problem-set folder."""
    run: Path = Field(json_schema_extra=_PROCESS)
    """The run repository (created, or resumed when it exists)."""
    model: str = Field(json_schema_extra=_MODEL)
    """litellm model string for workers, e.g. `anthropic/claude-opus-4-8`."""
    merger_model: str | None = Field(None, json_schema_extra=_MODEL)
    """Model for the merger's conflict resolution and summaries (default: `model`)."""
    api_base: str | None = Field(None, json_schema_extra=_MODEL)
    """Base URL of an OpenAI-compatible or self-hosted server (default: the provider's)."""
    api_key: str | None = Field(None, json_schema_extra=_MODEL)
    """API key; normally taken from the provider's usual environment variable instead."""
    reviewer_model: str | None = Field(None, json_schema_extra=_MODEL)
    """litellm model string for the review episodes (default: `model`). Given, reviews are
    assigned (`reviews` assigned, unless blind): each is an episode the scheduler assigns to one
    candidate, run on this model; every other episode runs on `model` and writes no review."""
    reviewer_api_base: str | None = Field(None, json_schema_extra=_MODEL)
    """Base URL of the reviewer model's server (default: `api_base`)."""
    reviewer_reasoning_effort: ReasoningEffort | None = Field(None, json_schema_extra=_MODEL)
    """The reviewer's reasoning mode: low, medium or high; None: the reviewer model's default."""
    reviewer_price_in_per_mtok: float | None = Field(None, ge=0, json_schema_extra=_MODEL)
    """USD per million input tokens of the reviewer model, for a model litellm has no price for."""
    reviewer_price_out_per_mtok: float | None = Field(None, ge=0, json_schema_extra=_MODEL)
    """USD per million output tokens of the reviewer model (see reviewer_price_in_per_mtok)."""
    workers: int = Field(4, ge=1, le=1024, json_schema_extra=_PROCESS)
    """Concurrency C: episodes in flight at once."""
    budget: int = Field(BUDGET_PER_PROBLEM, ge=1, json_schema_extra=_RUN)
    """Budget B: charged episodes (contributions and nominations; abstaining is free)."""
    max_episodes: int | None = Field(None, ge=1, json_schema_extra=_RUN)
    """Episodes of any outcome (charged, abstained, failed) at most, over the run and its
    resumes; None: three times the budget."""
    no_progress: int = Field(4, ge=1, json_schema_extra=_RUN)
    """A problem whose last this many episodes all abstained or failed is set aside: no more
    episodes are started on it; the run stops once every open problem is set aside."""
    max_usd: float | None = Field(None, ge=0, json_schema_extra=_RUN)
    """Stop before a call once this much money is spent, failed calls included (needs known prices)."""
    max_total_tokens: int | None = Field(None, ge=1, json_schema_extra=_RUN)
    """Stop before a call once the run's calls, failed ones included, spent this many tokens (in + out)."""
    time_limit_s: float | None = Field(None, ge=0, json_schema_extra=_PROCESS)
    """The run's wall time, in seconds of this start: past it no episode starts, and the
    episodes in flight get `stop_grace_s` to finish before they are cut short."""
    stop_grace_s: float = Field(20.0, ge=0, json_schema_extra=_RUN)
    """Seconds the episodes in flight get to finish once the time limit is reached or SIGTERM
    arrives; then each is cut short, recorded `stopped` (uncharged) with its transcript, its
    spending and its staged files, and the next run works on its problem again."""
    problem_ids: tuple[str, ...] = Field((), json_schema_extra=_RUN)
    """Work only on these problems (default: all)."""
    seed: int = Field(0, json_schema_extra=_RUN)
    """Seed of the scheduler's random choices."""
    max_steps: int = Field(12, ge=2, json_schema_extra=_RUN)
    """Model calls per episode at most."""
    max_steps_by_kind: dict[KindName, Annotated[int, Field(ge=2)]] = Field({}, json_schema_extra=_RUN)
    """Model calls per episode at most on the problems of a kind, over `max_steps` for them: a
    rebuild of a program (reproduce) takes hundreds of steps, e.g. `{reproduce = 300}` in a
    set.toml's [defaults] or a config file's [solve]; on the command line
    `--max-steps-by-kind reproduce=300`, once per kind."""
    episode_timeout_s: float = Field(3 * 3600.0, gt=0, json_schema_extra=_RUN)
    """Wall-clock limit of one episode: room for a reasoning model that thinks 15 minutes a reply."""
    max_output_tokens: int | None = Field(None, ge=1, json_schema_extra=_MODEL)
    """Tokens of one reply at most, thinking included; None: the model client's default."""
    reasoning_effort: ReasoningEffort | None = Field(None, json_schema_extra=_MODEL)
    """The workers' reasoning mode: low, medium or high; None: the model's default."""
    merger_reasoning_effort: ReasoningEffort | None = Field(None, json_schema_extra=_MODEL)
    """The merger's reasoning mode; None: the merger model's default."""
    tool_protocol: ToolProtocol = Field(_CLIENT["tool_protocol"], json_schema_extra=_MODEL)
    """How tools are offered: native function calling, a text protocol, or auto (text for a
    model without function calling)."""
    idle_timeout_s: float = Field(_CLIENT["idle_timeout_s"], gt=0, json_schema_extra=_MODEL)
    """A streamed reply that sends nothing for this long is cut and counts as a timeout."""
    reply_timeout_s: float = Field(_CLIENT["reply_timeout_s"], gt=0, json_schema_extra=_MODEL)
    """The longest one reply may take in all."""
    max_concurrent_calls: int | None = Field(None, ge=1, json_schema_extra=_MODEL)
    """Model calls in flight at once, the workers' and the merger's together; None: no bound.
    For a server that answers one request at a time: each call's reply timeout starts when its
    turn comes, not while it waits in the server's queue."""
    context_tokens: int = Field(6000, json_schema_extra=_RUN)
    """Hard cap, in tokens, of the memory overview in an episode's first prompt."""
    trim_context: bool = Field(True, json_schema_extra=_RUN)
    """Keep each episode's conversation bounded (`engine.window`): old tool outputs become stubs,
    and past `compact_at` of the model's window the older steps become one account. Off: every
    step sends the whole conversation so far."""
    whole_share: float = Field(0.15, gt=0, lt=1, json_schema_extra=_RUN)
    """The newest steps' tool outputs are sent whole up to this share of the model's context
    window (the last step's always); older outputs are stubbed a batch at a time, once a batch
    is as large, so that between two batches each request extends the previous one and is read
    from the provider's prompt cache. A compaction keeps these steps."""
    stub_chars: int = Field(1500, ge=0, json_schema_extra=_RUN)
    """A tool output longer than this, older than the steps sent whole, is replaced by a stub
    naming the call that made it and its size (the call can be made again)."""
    compact_at: float = Field(0.6, gt=0, le=1, json_schema_extra=_RUN)
    """Past this share of the model's context window, an episode compacts: the steps before
    those sent whole (`whole_share`) are replaced by an account of them."""
    compact_by: CompactBy = Field("model", json_schema_extra=_RUN)
    """Who writes a compaction's account: `model`, one call of the episode's model (charged to
    it) on what it did, staged, learned and meant to do next, beside a line per step and the
    staged files; `digest`, those alone, without a call."""
    context_window: int = Field(32_000, ge=1024, json_schema_extra=_RUN)
    """The context window, in tokens, the context policy assumes of a model litellm does not
    know (a local or new model); a model litellm knows uses litellm's figure."""
    overview_cited: int = Field(8, ge=0, json_schema_extra=_RUN)
    """Items the overview shows for being the most cited (the rest: list_items, search)."""
    overview_newest: int = Field(8, ge=0, json_schema_extra=_RUN)
    """Items the overview shows besides: the newest (more of them when fewer are cited)."""
    settle_nominations: int = Field(SETTLE_NOMINATIONS, ge=1, json_schema_extra=_RUN)
    """Nominations that settle a problem where several candidates are verified (or with `verify`
    0): its leader settles it once it has this many. A verified candidate with no verified
    rival settles its problem without any."""
    verify: int = Field(VERIFY, ge=0, json_schema_extra=_RUN)
    """K: a candidate is verified by K `pass` reviews from distinct workers other than its
    author and no `critical` review; only a verified candidate is selected as verified, and
    only one settles a problem. 0: plain plurality of nominations, no review needed."""
    verify_in_row: bool = Field(False, json_schema_extra=_RUN)
    """The K passes must come in a row: only passes after a candidate's latest `gaps` review
    count (a verifier that finds any issue restarts the count). A critical review blocks a
    candidate in either case; its revision is a new candidate, counted from zero."""
    person_reviews: PersonReviews = Field("advice", json_schema_extra=_RUN)
    """What a person's review (`gitswarm review`) counts for: `advice`, shown to the workers and
    in `show`, not counted; `counts`, counted toward verification like a worker's (a person's
    critical blocks the candidate)."""
    from_run: Path | None = Field(None, json_schema_extra=_PROCESS)
    """A run of the same set whose main the new run's memory begins with (`solve --from`); read
    only when the run is created."""
    reviews: Reviews = Field("open", json_schema_extra=_RUN)
    """Who writes reviews and what they see. `open`: any episode may choose to review a
    candidate, with the whole memory in view. `assigned`: each review is an episode of its own,
    which the scheduler assigns to one candidate (on `reviewer_model` where one is given) and
    which sees the memory; the other episodes write no review. `blind`: assigned, and it reads
    the problem's own files (statement, documentation, starter files) and the candidate's alone,
    not its author's notes or self-assessment, not the other reviews, not the memory overview,
    so that its verdict is an independent check. A reviewer model makes `open` assigned."""
    isolation: Isolation = Field("shared", json_schema_extra=_RUN)
    """How much of the memory an episode sees. `shared`: the swarm, every contribution on main.
    `independent`: only its problem's statement, as independent sampling does (no overview,
    no other episode's items, searches or announcements); its episodes write attempts, notes
    and code but cannot review or nominate, so `verify` does not apply, and each answer
    problem's solution is the attempt whose final answer most attempts agree on
    (self-consistency). `best-of-n`: best-of-N with a verifier; attempts as in `independent`,
    and blind review episodes (`reviews` blind) assigned to them, selected by the review
    rule (the first verified attempt settles its problem, else the best reviewed is written,
    unverified); no nominations, no revisions. The baselines `gitswarm experiment` compares the
    swarm with."""
    unconfined: bool = Field(False, json_schema_extra=_PROCESS)
    """Run the programs of code problems (program, reproduce) even where this machine cannot make
    a sandbox's root (no bubblewrap, no usable namespaces): they then run with resource limits
    and a fresh uid only, seeing the host's files. Off: such a run is refused at its start.
    Named in the event log (`run_started`), `status` and the report."""
    summary_every: int = Field(5, json_schema_extra=_RUN)
    """The merger rewrites a problem's SUMMARY.md at most once per this many merges."""
    price_in_per_mtok: float | None = Field(None, ge=0, json_schema_extra=_MODEL)
    """USD per million input tokens, for models litellm has no price for."""
    price_out_per_mtok: float | None = Field(None, ge=0, json_schema_extra=_MODEL)
    """USD per million output tokens, for models litellm has no price for."""
    price_cached_in_per_mtok: float | None = Field(None, ge=0, json_schema_extra=_MODEL)
    """USD per million input tokens read from the provider's cache (default: the input price)."""
    price_cache_write_per_mtok: float | None = Field(None, ge=0, json_schema_extra=_MODEL)
    """USD per million input tokens written to the provider's cache (default: the input price)."""

    @classmethod
    def for_set(cls, problem_set: ProblemSet, run: Path, **values: Any) -> SolveConfig:
        """The settings of a run of `problem_set` in `run`: `values`, with the budget's default
        (`BUDGET_PER_PROBLEM` per problem of the set) where they give none."""
        budget = BUDGET_PER_PROBLEM * max(1, len(problem_set.problems))
        return cls(problems=problem_set.path, run=run, **{"budget": budget} | values)

    @model_validator(mode="before")
    @classmethod
    def _assigned(cls, data: object, info: ValidationInfo) -> object:
        """A reviewer model runs the review episodes: reviews left open become assigned (in a
        run's process: `ACROSS_PROCESSES`, whose reviews are the run's, it is refused instead)."""
        if isinstance(data, dict) and data.get("reviewer_model") and data.get("reviews", "open") == "open":
            if (info.context or {}).get(ACROSS_PROCESSES):
                raise ValueError("--reviewer-model runs the review episodes of a run whose reviews are assigned or "
                                 "blind, and this run's are open (any episode reviews, on its model): leave "
                                 "--reviewer-model out, or start the run with --reviews assigned or blind")
            data = {**data, "reviews": "assigned"}
        return data

    @model_validator(mode="before")
    @classmethod
    def _steps_by_kind(cls, data: object) -> object:
        """`max_steps_by_kind` given as the command line gives it, `kind=N` texts, read as a table."""
        given = data.get("max_steps_by_kind") if isinstance(data, dict) else None
        if isinstance(data, dict) and isinstance(given, list | tuple) and all(isinstance(g, str) for g in given):
            pairs = [g.partition("=") for g in given]
            if any(not sep for _, sep, _ in pairs):
                raise ValueError(f"max_steps_by_kind: give KIND=N, e.g. reproduce=300, not {given[0]!r}")
            data = {**data, "max_steps_by_kind": {k.strip(): n.strip() for k, _, n in pairs}}
        return data

    @model_validator(mode="before")
    @classmethod
    def _episode_cap(cls, data: object) -> object:
        """No episode cap given: three times the budget, read as the field reads it (a config
        file's "5" or 5.0 is 5); a budget that is no number is left to the field to refuse."""
        if isinstance(data, dict) and data.get("max_episodes") is None:
            try:
                budget = _COUNT.validate_python(data.get("budget", cls.model_fields["budget"].default))
            except ValidationError:
                return data
            data = {**data, "max_episodes": max(1, EPISODES_PER_CHARGE * budget)}
        return data

    @model_validator(mode="after")
    def _reviewers(self, info: ValidationInfo) -> SolveConfig:
        """K passes from workers other than the author need K + 1 workers: with fewer, no
        attempt could ever be verified, and no problem settle (across every process, for one
        of a remote run's: `ACROSS_PROCESSES`). Reviews need a rule that asks for them."""
        needed = Rule.of(self).workers_needed
        alone = not (info.context or {}).get(ACROSS_PROCESSES)
        if alone and self.workers < needed and self.isolation != "independent":  # ValueError: pydantic reports it
            raise ValueError(f"verify={self.verify} needs at least {needed} workers (a review counts "
                             f"only from a worker other than the attempt's author), not {self.workers}: give "
                             f"--workers {needed} or more, or a smaller --verify (0: no review needed)")
        if self.isolation == "best-of-n" and self.verify == 0:
            raise ValueError("isolation best-of-n selects by reviews, and verify=0 asks for none: give --verify 1 "
                           "or more, or --isolation independent (selection by majority answer)")
        if self.reviews != "open" and (self.isolation == "independent" or self.verify == 0):
            why = "isolation independent writes no review" if self.isolation == "independent" else \
                "verify=0 asks for no review"
            given = "--reviewer-model" if self.reviewer_model else f"--reviews {self.reviews}"
            raise ValueError(f"{given} sets how reviews are written, but {why}: give --verify 1 or more with "
                           "isolation shared or best-of-n, or leave it out")
        return self

    def steps(self, kind: str) -> int:
        """Model calls per episode at most on a problem of `kind` (`max_steps_by_kind`, else `max_steps`)."""
        return self.max_steps_by_kind.get(kind, self.max_steps)  # type: ignore[call-overload]

    @property
    def episode_cap(self) -> int:
        """The episode cap: `max_episodes`, which `_episode_cap` sets from the budget when none is given."""
        assert self.max_episodes is not None
        return self.max_episodes

    @property
    def models(self) -> ModelSettings:
        """The model of each role, the workers', the merger's and the reviewer's, each the whole
        settings of its client, derived from the fields of the model part (`ModelSettings.of`)."""
        return ModelSettings.of(self)

    @property
    def merger(self) -> str:
        return self.merger_model or self.model

    @property
    def reviewer(self) -> str:
        """The model review episodes run on."""
        return self.reviewer_model or self.model

    @property
    def assigns_reviews(self) -> bool:
        """Reviews are episodes the scheduler assigns to one candidate each: with a reviewer
        model, with blind reviews, and in best-of-n."""
        return self.reviews != "open" or self.isolation == "best-of-n"

    @property
    def blind(self) -> bool:
        """A review episode reads the statement and its candidate alone (best-of-n's always do)."""
        return self.reviews == "blind" or self.isolation == "best-of-n"

    def part(self, part: Part) -> dict:
        """The values of one part's fields (`PARTS`), by name, as JSON has them (a tuple as a list)."""
        return self.model_dump(mode="json", include=set(PARTS[part]))  # IncEx: a set, not a frozenset


def declared_parts(model: type[BaseModel]) -> dict[Part, frozenset[str]]:
    """Each part's fields, as each field of `model` declares; a field that declares none (or a
    part that does not exist) is refused, and `PARTS` is read as this module loads, so no field
    of `SolveConfig` can be left out of every part."""
    found: dict[Part, set[str]] = {part: set() for part in get_args(Part)}
    for name, info in model.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        part = extra.get("part")
        if part not in found:
            raise TypeError(f"{model.__name__}.{name} declares no part: give it json_schema_extra=_RUN, "
                            "_MODEL or _PROCESS (engine.config.Part says which is which)")
        found[part].add(name)
    return {part: frozenset(names) for part, names in found.items()}


PARTS = declared_parts(SolveConfig)
"""The fields of each part of `SolveConfig`: every field in exactly one."""


class GradeConfig(BaseModel):
    """The referee's settings for `gitswarm grade`: the config file's [grade] table, then flags."""

    model_config = {"frozen": True, "extra": "forbid"}

    referee_model: str | None = None
    """litellm model string of the referee (needed for proof problems)."""
    api_base: str | None = None
    """Base URL of an OpenAI-compatible server for the referee model."""
    reasoning_effort: ReasoningEffort | None = None
    """The referee's reasoning mode: low, medium or high; None: the model's default."""
    compile_timeout: float = Field(900.0, gt=0)
    """Seconds a reproduce candidate's compile.sh may run (ProgramBench's limit: 900)."""
    branch_timeout: float = Field(2400.0, gt=0)
    """Seconds one test branch of a reproduce problem may run (ProgramBench's limit: 2,400)."""
