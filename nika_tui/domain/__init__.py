"""Pure domain code: models and functions, no I/O, no clock (``now`` is an argument).

Imports none of textual, questionary, qdrant, redis, libtmux, keyring (tests enforce it).
"""
