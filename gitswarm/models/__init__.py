"""Model access: litellm is reached from this package only.

`client` makes the calls (streaming, timeouts, retries, adapting to refusals and to local
servers), `leaked` reads tool calls a model wrote into its text, `request`
builds litellm's arguments, `stream` reads a streamed reply, `reply` turns litellm's response
into tool calls, usage and the verbatim assistant turn, `arguments` parses tool arguments
leniently, `pricing` prices a call, `capabilities` says what a model takes, `textproto` is
the text protocol for models without tool calls (`textparse` reads replies in it), `config`
the client's settings, `errors` what a failure means, `credentials` checks a model before a
run spends anything, and `lib` imports litellm.

The package imports nothing itself, so that a command that only reads its settings (`config`)
does not load the client: import each name from its module.
"""
