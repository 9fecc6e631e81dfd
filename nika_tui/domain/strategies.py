"""Which scaling / compression strategies a tenant can use (seed: « Stratégies conditionnelles »).

A strategy is available only when the tenant configured what it needs: no provider key, no
scaling; no knowledge repository, no compression. Nothing here raises: an unavailable strategy is
simply not proposed.

Mapping (decision, documented in ``docs/wizard.md``):

* ``scale_horizontal_eu`` — general-purpose VPS capacity: Scaleway, Contabo (the seed) and
  Microsoft Azure (compute VMs with EU regions and one Active Directory tenant per customer,
  listed by the seed beside Scaleway / Contabo for "a dedicated VPS per heavy tenant").
* ``scale_horizontal_gpu`` — GPU / ML capacity billed by the minute or hour: RunPod, Google Cloud
  (the seed) and AWS (EC2 spot GPU and SageMaker).
* ``compress_to_repo`` — strategy A: a knowledge repository is set.
"""

from __future__ import annotations

from enum import StrEnum

from nika_tui.domain.tenant import Language, Provider, TenantConfig


class Strategy(StrEnum):
    SCALE_HORIZONTAL_EU = "scale_horizontal_eu"
    SCALE_HORIZONTAL_GPU = "scale_horizontal_gpu"
    COMPRESS_TO_REPO = "compress_to_repo"


#: Which scale strategy each provider's key unlocks.
PROVIDER_STRATEGY: dict[Provider, Strategy] = {
    Provider.SCALEWAY: Strategy.SCALE_HORIZONTAL_EU,
    Provider.CONTABO: Strategy.SCALE_HORIZONTAL_EU,
    Provider.AZURE: Strategy.SCALE_HORIZONTAL_EU,
    Provider.RUNPOD: Strategy.SCALE_HORIZONTAL_GPU,
    Provider.GCP: Strategy.SCALE_HORIZONTAL_GPU,
    Provider.AWS: Strategy.SCALE_HORIZONTAL_GPU,
}

_RECOMMENDATION = {
    Language.EN: (
        "configure a Scaleway API key in the wizard to enable scaling, "
        "or allow compression to a Git repo to reset fresh"
    ),
    Language.FR: (
        "configurez une clé API Scaleway dans le wizard pour activer le scaling, "
        "ou autorisez la compression vers un repo Git pour reset fresh"
    ),
}


def available_strategies(config: TenantConfig) -> list[Strategy]:
    """The strategies this tenant's configuration makes available, in a stable order.

    Args:
        config: The tenant configuration.

    Returns:
        A subset of ``[scale_horizontal_eu, scale_horizontal_gpu, compress_to_repo]``, in that
        order, without duplicates.
    """
    unlocked = {PROVIDER_STRATEGY[p] for p in Provider if config.has_api_key(p)}
    if config.has_repo():
        unlocked.add(Strategy.COMPRESS_TO_REPO)
    return [s for s in Strategy if s in unlocked]


def recommendation(config: TenantConfig, language: Language | str | None = None) -> str | None:
    """The seed's advice when no strategy is available, else ``None``.

    Args:
        config: The tenant configuration.
        language: ``en`` or ``fr``; defaults to the tenant's own language.

    Returns:
        One sentence telling the user how to enable a strategy, or ``None`` when at least one
        strategy is already available.
    """
    if available_strategies(config):
        return None
    lang = Language(language) if language is not None else config.language
    return _RECOMMENDATION[lang]
