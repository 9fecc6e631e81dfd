"""The memory service (``nika serve``): the loop, the ingest pipeline, the RPC table, liveness."""
