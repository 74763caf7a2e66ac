"""Before a run spends anything: can this model be called as configured, and priced?"""

from __future__ import annotations

import os
from types import ModuleType

from gitswarm.models.config import ModelConfig
from gitswarm.models.lib import configured_base, litellm_module


def has_price(config: ModelConfig) -> bool:
    """We can put a price on calls to this model: the user gave prices, or litellm has one."""
    if config.user_priced:
        return True
    try:
        cost_in, cost_out = litellm_module().cost_per_token(model=config.model, prompt_tokens=10**6,
                                                      completion_tokens=10**6)
    except Exception:  # unmapped model: litellm raises assorted types
        return False
    return cost_in + cost_out > 0


NO_MODEL = ("No model is configured. Pass --model with a litellm model string (for example "
            "anthropic/claude-opus-4-8, openai/gpt-5.5 or ollama/llama3) or set GITSWARM_MODEL; "
            "`gitswarm demo` runs offline without one.")


def unroutable(model: str) -> str:
    """What to do when litellm cannot tell which provider serves `model`."""
    return (f"litellm cannot tell which provider serves the model {model!r}. Write it as "
            "provider/name, for example anthropic/claude-opus-4-8, openai/gpt-5.5 or ollama/llama3.")


def credentials_hint(model: str, *, api_base: str | None = None, api_key: str | None = None) -> str | None:
    """None when `model` can be called as configured; otherwise one paragraph saying what to set."""
    if not model.strip():
        return NO_MODEL
    litellm = litellm_module()
    try:
        provider = litellm.get_llm_provider(model)[1]
    except litellm.exceptions.BadRequestError:
        return unroutable(model)
    if api_key or configured_base(model, api_base):
        return None
    missing = _missing_keys(litellm, model)
    # A missing *_API_BASE is fine: such providers (ollama, ...) default to their local address.
    keys = [k for k in missing if not k.endswith(("_API_BASE", "_BASE_URL"))]
    if not keys:
        return None
    return (f"The model {model!r} (provider {provider}) needs credentials from the environment, and "
            f"litellm reports {', '.join(keys)} missing. Set it (export {keys[0]}=...) and run again, or "
            "pass --api-base URL to use a local OpenAI-compatible server instead.")


def _missing_keys(litellm: ModuleType, model: str) -> list[str]:
    """The credential variables litellm wants for `model` and does not find; an empty one
    (`export ANTHROPIC_API_KEY=`) counts as missing, though litellm only asks whether it is set."""
    empty = {k: v for k, v in os.environ.items() if not v.strip()}
    for name in empty:
        del os.environ[name]
    try:
        return litellm.validate_environment(model)["missing_keys"]
    finally:
        os.environ.update(empty)
