# ruff: noqa: E501  (the corpus keeps one case per line, however long the token)
"""The masker's corpus: each credential shape is masked; look-alikes that are not secrets stay.

The secrets below are made up in the documented shapes (never real credentials).
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from nika_tui.domain.secret_patterns import MASK, PATTERNS, mask_secrets


class Secret(NamedTuple):
    test_id: str
    text: str
    secret: str


SECRETS = [
    Secret("anthropic", "use sk-ant-api03-AbCdEf0123456789_xyzXYZ-00 for claude", "sk-ant-api03-AbCdEf0123456789_xyzXYZ-00"),
    Secret("openai-project", "OPENAI key sk-proj-AbC123dEf456GhI789jKl0mN", "sk-proj-AbC123dEf456GhI789jKl0mN"),
    Secret("openai-legacy", "key: sk-0123456789abcdefghijABCDEFGHIJ", "sk-0123456789abcdefghijABCDEFGHIJ"),
    Secret("github-classic", "push with ghp_0123456789abcdefghijABCDEFGHIJklmnop", "ghp_0123456789abcdefghijABCDEFGHIJklmnop"),
    Secret("github-server", "token ghs_0123456789abcdefghijABCDEFGHIJ", "ghs_0123456789abcdefghijABCDEFGHIJ"),
    Secret("github-fine", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"),
    Secret("gitlab", "glpat-AbCdEf0123456789xyzW in CI", "glpat-AbCdEf0123456789xyzW"),
    Secret("aws-key-id", "the key AKIAIOSFODNN7EXAMPLE is prod", "AKIAIOSFODNN7EXAMPLE"),
    Secret("aws-session-id", "ASIAIOSFODNN7EXAMPLE temporary", "ASIAIOSFODNN7EXAMPLE"),
    Secret("aws-secret-env", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    Secret("scaleway-secret-env", "export SCW_SECRET_KEY=11111111-2222-3333-4444-555555555555", "11111111-2222-3333-4444-555555555555"),
    Secret("google", "maps AIzaSyA-0123456789abcdefghijklmnopqrstu", "AIzaSyA-0123456789abcdefghijklmnopqrstu"),
    Secret("slack", "bot xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl"),
    Secret("stripe", "sk_live_0123456789abcdefABCDEF in .env", "sk_live_0123456789abcdefABCDEF"),
    Secret("huggingface", "HF hf_abcdefghijklmnopqrstuvwxyzABCDEF01", "hf_abcdefghijklmnopqrstuvwxyzABCDEF01"),
    Secret("npm", "npm_abcdefghijklmnopqrstuvwxyz0123456789 publish", "npm_abcdefghijklmnopqrstuvwxyz0123456789"),
    Secret("jwt", "cookie eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    Secret("bearer", "curl -H 'Authorization: Bearer abcdef0123456789ABCDEFxyz.-_'", "abcdef0123456789ABCDEFxyz.-_"),
    Secret("url-password", "DATABASE_URL is postgres://app:s3cr3t-pass@db:5432/app", "s3cr3t-pass"),
    Secret("password-assign", "the admin password = hunter2hunter2 for now", "hunter2hunter2"),
    Secret("api-key-quoted", 'api_key: "0123abcd4567efgh"', "0123abcd4567efgh"),
    Secret("private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAA"),
]  # fmt: skip


NOT_SECRETS = [
    "commit 3f9c2a7d1e5b8c4f6a0d9e2b7c1f4a8d3e6b9c2f fixed the build",
    "tenant uuid 11111111-2222-3333-4444-555555555555 owns the shard",
    "the token budget is 8000 per session",
    "set max_tokens: 4096 and temperature: 0.2",
    "we use sk-learn and scikit-learn for the baseline",
    "the password policy requires 12 characters",
    "password_reset_url: https://example.com/reset",
    "deploy with ansible from the ops repo; AKIA is the AWS key prefix",
    "see https://docs.example.com:8443/path@v2 for details",
    "tasks: ghp is a prefix of GitHub tokens",
    "PORT=8080 and REDIS_URL=unix:///tmp/redis.sock",
    "memory id 4d5e6f70-8192-4a3b-9c8d-0e1f2a3b4c5d was retired",
]


@pytest.mark.parametrize("case", SECRETS, ids=[c.test_id for c in SECRETS])
def test_each_credential_shape_is_masked(case: Secret) -> None:
    masked, count = mask_secrets(case.text)
    assert case.secret not in masked
    assert MASK in masked and count >= 1


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert mask_secrets(text) == (text, 0)


@pytest.mark.parametrize("case", SECRETS, ids=[c.test_id for c in SECRETS])
def test_masking_is_idempotent(case: Secret) -> None:
    once, _ = mask_secrets(case.text)
    assert mask_secrets(once) == (once, 0)


def test_assignments_keep_their_name() -> None:
    masked, _ = mask_secrets("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    assert masked == f"AWS_SECRET_ACCESS_KEY={MASK}"


def test_every_pattern_is_exercised_by_the_corpus() -> None:
    used = {p.name for p in PATTERNS for c in SECRETS if p.regex.search(c.text)}
    assert used == {p.name for p in PATTERNS}
