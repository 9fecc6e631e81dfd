"""available_strategies over every provider combination, and the seed's recommendation."""

from __future__ import annotations

import itertools
from typing import NamedTuple

import pytest

from nika_tui.domain.provider_formats import PROVIDER_FIELDS
from nika_tui.domain.strategies import Strategy, available_strategies, recommendation
from nika_tui.domain.tenant import (
    Language,
    Provider,
    ProviderConfig,
    SecretRef,
    SecretSource,
    TenantConfig,
)

EU = {Provider.SCALEWAY, Provider.CONTABO, Provider.AZURE}
GPU = {Provider.RUNPOD, Provider.GCP, Provider.AWS}


def make_config(
    providers: set[Provider], repo: str | None = None, language: Language = Language.EN
) -> TenantConfig:
    refs = {
        p: ProviderConfig(
            fields={
                s.name: SecretRef(source=SecretSource.ENV, name=s.env_var)
                for s in PROVIDER_FIELDS[p]
            }
        )
        for p in providers
    }
    return TenantConfig(
        tenant_id="acme",
        display_name="Acme",
        providers=refs,
        knowledge_repo=repo,
        language=language,
    )


ALL_COMBINATIONS = [
    (set(combo), repo)
    for n in range(len(Provider) + 1)
    for combo in itertools.combinations(Provider, n)
    for repo in (None, "git@github.com:acme/nika-os-knowledge.git")
]


@pytest.mark.parametrize(
    ("providers", "repo"),
    ALL_COMBINATIONS,
    ids=[f"{'+'.join(sorted(p)) or 'none'}{'+repo' if r else ''}" for p, r in ALL_COMBINATIONS],
)
def test_every_provider_combination(providers: set[Provider], repo: str | None) -> None:
    expected = []
    if providers & EU:
        expected.append(Strategy.SCALE_HORIZONTAL_EU)
    if providers & GPU:
        expected.append(Strategy.SCALE_HORIZONTAL_GPU)
    if repo:
        expected.append(Strategy.COMPRESS_TO_REPO)
    config = make_config(providers, repo)
    assert available_strategies(config) == expected
    assert (recommendation(config) is None) == bool(expected)


def test_all_128_combinations_are_covered() -> None:
    assert len(ALL_COMBINATIONS) == 2 ** (len(Provider) + 1) == 128


class SeedCase(NamedTuple):
    test_id: str
    providers: set[Provider]
    repo: str | None
    expected: list[str]


SEED_CASES = [
    SeedCase("scaleway-only", {Provider.SCALEWAY}, None, ["scale_horizontal_eu"]),
    SeedCase("contabo-only", {Provider.CONTABO}, None, ["scale_horizontal_eu"]),
    SeedCase("runpod-only", {Provider.RUNPOD}, None, ["scale_horizontal_gpu"]),
    SeedCase("gcp-only", {Provider.GCP}, None, ["scale_horizontal_gpu"]),
    SeedCase("azure-counts-as-eu", {Provider.AZURE}, None, ["scale_horizontal_eu"]),
    SeedCase("aws-counts-as-gpu", {Provider.AWS}, None, ["scale_horizontal_gpu"]),
    SeedCase("repo-only", set(), "/srv/knowledge", ["compress_to_repo"]),
    SeedCase(
        "everything",
        set(Provider),
        "https://github.com/acme/k.git",
        ["scale_horizontal_eu", "scale_horizontal_gpu", "compress_to_repo"],
    ),
    SeedCase("nothing", set(), None, []),
]


@pytest.mark.parametrize("case", SEED_CASES, ids=[c.test_id for c in SEED_CASES])
def test_seed_mapping(case: SeedCase) -> None:
    assert available_strategies(make_config(case.providers, case.repo)) == case.expected


def test_empty_repo_string_is_no_repo() -> None:
    assert available_strategies(make_config(set(), "")) == []


def test_recommendation_text_in_english_and_french() -> None:
    config = make_config(set())
    en = recommendation(config, "en")
    fr = recommendation(config, Language.FR)
    assert en is not None and "Scaleway" in en and "Git repo" in en
    assert fr == (
        "configurez une clé API Scaleway dans le wizard pour activer le scaling, "
        "ou autorisez la compression vers un repo Git pour reset fresh"
    )


def test_recommendation_defaults_to_the_tenant_language() -> None:
    assert recommendation(make_config(set(), language=Language.FR)) == recommendation(
        make_config(set()), "fr"
    )
