"""Textual screens of the dashboard."""
