"""The offline demo: a scripted model that speaks through the fake OpenAI server."""
