"""Model access: litellm is reached from this package only.

`client` makes the calls (timeouts, retries, tokens, cost), `errors` says what a failure
means, `credentials` checks a model before a run spends anything, `lib` imports litellm.
"""

from gitswarm.models.client import LiteLLMModel, Reply, ToolCall
from gitswarm.models.config import ModelConfig
from gitswarm.models.credentials import credentials_hint, has_price
from gitswarm.models.errors import ModelError
from gitswarm.usage import Usage

__all__ = ["LiteLLMModel", "ModelConfig", "ModelError", "Reply", "ToolCall", "Usage", "credentials_hint",
           "has_price"]
