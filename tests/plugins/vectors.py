"""Fixtures for this area (see tests/conftest.py)."""

from __future__ import annotations
