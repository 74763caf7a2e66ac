"""Model access: litellm is reached from this package only.

`client` makes the calls (streaming, timeouts, retries, adapting to refusals and to local
servers), `leaked` reads tool calls a model wrote into its text, `request`
builds litellm's arguments, `stream` reads a streamed reply, `reply` turns litellm's response
into tool calls, usage and the verbatim assistant turn, `arguments` parses tool arguments
leniently, `pricing` prices a call, `capabilities` says what a model takes, `textproto` is
the text protocol for models without tool calls (`textparse` reads replies in it), `config`
the client's settings, `errors` what a failure means, `credentials` checks a model before a
run spends anything, and `lib` imports litellm.
"""

from gitswarm.models.client import LiteLLMModel, Reply, ToolCall
from gitswarm.models.config import ModelConfig
from gitswarm.models.credentials import credentials_hint, has_price
from gitswarm.models.errors import ModelError, Retry
from gitswarm.usage import Usage

__all__ = ["LiteLLMModel", "ModelConfig", "ModelError", "Reply", "Retry", "ToolCall", "Usage", "credentials_hint",
           "has_price"]
