"""Per-tenant billing (issue 18): tool calls and model tokens in a log, priced by model."""
