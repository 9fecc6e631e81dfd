"""Per-tenant quotas (issue 18): CPU and RAM through cgroups, tokens per day from usage records."""
