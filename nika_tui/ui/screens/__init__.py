"""Dashboard screens (one per file)."""
