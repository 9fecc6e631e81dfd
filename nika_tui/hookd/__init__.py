"""The lean hook entry (:mod:`.client`) and the hook server it hands runs to (:mod:`.server`).

Nothing here imports redis, pydantic or the CLI: the client sits in front of every prompt.
"""
