"""Recall that tunes itself by the seed's rule (docs/tuning.md): labels, search, adoption."""
