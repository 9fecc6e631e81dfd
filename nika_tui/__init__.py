"""nika-os: a multi-tenant memory system for AI coding agents, with its wizard and dashboard."""

from __future__ import annotations

__version__ = "0.1.0"
