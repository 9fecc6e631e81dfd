"""A tenant's scale-out settings (``scale:`` in its config.yaml): per-provider worker shape.

Everything here is non-secret: instance type, region, image, the estimated cost per hour shown
in a confirmation, and provider ids (Scaleway project, Azure subscription / resource group /
subnet, AWS subnet). A provider without an entry uses :data:`DEFAULT_PROVIDER_SCALE`. Costs are
estimates to check against the provider's price list, not quotes.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

_PROVIDERS = ("scaleway", "contabo", "azure", "gcp", "aws", "runpod")


class ProviderScale(BaseModel):
    """The worker one provider creates for this tenant."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_type: str = Field(min_length=1, description="Provider type / size / product id.")
    region: str = Field(min_length=1, description="Zone, region or location (RunPod: data center).")
    image: str = Field(min_length=1, description="Image id or name.")
    cost_per_hour_eur: float = Field(gt=0, description="Estimated cost shown before applying.")
    settings: dict[str, str] = Field(
        default_factory=dict, description="Provider ids: project_id, subscription_id, …"
    )
    base_url: str | None = Field(default=None, description="API base URL override.")


DEFAULT_PROVIDER_SCALE: dict[str, ProviderScale] = {
    "scaleway": ProviderScale(
        instance_type="PRO2-S", region="fr-par-2", image="ubuntu_noble", cost_per_hour_eur=0.11
    ),
    "contabo": ProviderScale(
        instance_type="V94",
        region="EU",
        image="afecbb85-e2fc-46f0-9684-b46b1faf00bb",
        cost_per_hour_eur=0.012,
    ),
    "azure": ProviderScale(
        instance_type="Standard_D2s_v5",
        region="westeurope",
        image="Canonical:ubuntu-24_04-lts:server:latest",
        cost_per_hour_eur=0.10,
    ),
    "gcp": ProviderScale(
        instance_type="e2-standard-2",
        region="europe-west4-a",
        image="projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64",
        cost_per_hour_eur=0.075,
    ),
    "aws": ProviderScale(
        instance_type="t3.large",
        region="eu-west-3",
        image="resolve:ssm:/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id",
        cost_per_hour_eur=0.09,
    ),
    "runpod": ProviderScale(
        instance_type="NVIDIA L4",
        region="EU-RO-1",
        image="python:3.12-slim",
        cost_per_hour_eur=0.43,
    ),
}


class ScaleConfig(BaseModel):
    """Strategy B for one tenant."""

    model_config = ConfigDict(extra="forbid")

    providers: dict[str, ProviderScale] = Field(default_factory=dict)
    max_workers: int = Field(default=2, ge=0, le=50, description="Workers at most at once.")
    calm_minutes: int = Field(
        default=30, ge=1, description="Load below every threshold this long → decommission."
    )
    queue_threshold: int = Field(default=50, ge=1, description="Ingest queue depth N (seed: 50).")

    @field_validator("providers")
    @classmethod
    def _known(cls, value: dict[str, ProviderScale]) -> dict[str, ProviderScale]:
        unknown = sorted(set(value) - set(_PROVIDERS))
        if unknown:
            raise ValueError(f"unknown provider(s) {unknown}; expected one of {list(_PROVIDERS)}")
        return value

    def for_provider(self, provider: str) -> ProviderScale:
        """This tenant's worker shape on ``provider`` (its entry, else the default)."""
        return self.providers.get(provider) or DEFAULT_PROVIDER_SCALE[provider]
