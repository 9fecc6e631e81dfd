"""Helpers shared by several test modules (a test module never imports another one).

Heavy libraries (numpy, qdrant, the MCP SDK) are imported inside the functions that need
them, so that collecting the suite stays fast.
"""
