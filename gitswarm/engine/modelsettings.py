"""The models of a run, one per role (`ModelSettings`): the workers', the merger's and, where the
run names one, the review episodes' — each the whole settings of its model client
(`models.config.ModelConfig`: which model, where, how it reasons, its prices, its timeouts),
derived once from the run's flat settings (`SolveConfig.models`), which keep the user's surface:
`--model`, `--merger-model`, `--reviewer-model`, `reviewer_price_in_per_mtok` and the rest.

Every consumer takes a role's settings whole: `cli/running.py` builds the clients from them,
`solve` checks their prices, `doctor` probes the workers' and the reviewer's, a remote worker
derives its own from its settings, and a coordinator publishes its roles' model names
(`remote.publish.settings_of`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from gitswarm.models.config import ModelConfig

if TYPE_CHECKING:
    from gitswarm.engine.config import SolveConfig

MERGER_REPLY_TIMEOUT_S = 600.0
"""The longest one merger reply may take (when the run's `reply_timeout_s` is not shorter, and
the merger is not asked to reason). Its replies are not streamed, so no idle cut applies: this
bounds a silent connection instead, with the one timeout retry 20 minutes of a merger that
composes one conflict at a time. A merger reply is one file (a conflict's, or SUMMARY.md)."""
_CLIENT = frozenset(f.name for f in fields(ModelConfig))
"""The settings a model client has: the run's model part is read by these names."""


@dataclass(frozen=True)
class ModelSettings:
    """The model each role of a run calls, as its client is configured."""

    worker: ModelConfig
    """The workers' (`model`, `api_base`, `reasoning_effort`, `price_*`, and the client's
    settings every role shares: timeouts, retries, the tool protocol, the bound on calls)."""
    merger: ModelConfig
    """The merger's (`merger_model`, else the workers'; `merger_reasoning_effort`): replies not
    streamed (litellm handles a stream chunk by chunk, about 0.5 ms of CPU each, and the merger's
    replies are whole files, in the one event loop the workers share), and without reasoning,
    bounded by `MERGER_REPLY_TIMEOUT_S`. A merger model other than the workers' is priced by
    litellm alone."""
    reviewer: ModelConfig | None = None
    """The review episodes' (`reviewer_model`, `reviewer_api_base` else the workers' server,
    `reviewer_reasoning_effort`, `reviewer_price_*`); None: they run on the workers' model."""

    @classmethod
    def of(cls, cfg: SolveConfig, api_base: str | None = None) -> ModelSettings:
        """Each role's model from the run's settings `cfg` (its model part, `engine.config.Part`);
        with `api_base`, reached there instead of at the settings' `api_base` (the demo's fake
        server; a reviewer with a server of its own keeps it)."""
        base = api_base or cfg.api_base
        shared = {key: value for key, value in cfg.part("model").items() if key in _CLIENT} | {"api_base": base}
        user_prices = {key: shared[key] for key in shared if key.startswith("price_")}
        no_prices = dict.fromkeys(user_prices)
        worker = ModelConfig(**shared)
        merger_effort = cfg.merger_reasoning_effort
        merger = ModelConfig(**shared | (user_prices if cfg.merger == cfg.model else no_prices) | {
            "model": cfg.merger, "reasoning_effort": merger_effort, "stream": False,
            "reply_timeout_s": cfg.reply_timeout_s if merger_effort else min(cfg.reply_timeout_s,
                                                                               MERGER_REPLY_TIMEOUT_S)})
        reviewer = ModelConfig(**shared | no_prices | {
            "model": cfg.reviewer_model, "api_base": cfg.reviewer_api_base or base,
            "reasoning_effort": cfg.reviewer_reasoning_effort, "price_in_per_mtok": cfg.reviewer_price_in_per_mtok,
            "price_out_per_mtok": cfg.reviewer_price_out_per_mtok}) if cfg.reviewer_model else None
        return cls(worker, merger, reviewer)

    @property
    def each(self) -> tuple[ModelConfig, ...]:
        """The run's models: the workers', the merger's and the reviewer's where it has one."""
        return (self.worker, self.merger, *([self.reviewer] if self.reviewer is not None else []))

    def names(self) -> dict[str, str | None]:
        """Each role's model by name, as a run records them (`model`, `merger_model`, `reviewer_model`)."""
        return {"model": self.worker.model, "merger_model": self.merger.model,
                "reviewer_model": self.reviewer.model if self.reviewer is not None else None}
