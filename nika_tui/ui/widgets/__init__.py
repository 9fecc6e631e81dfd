"""Dashboard widgets (one per file)."""
