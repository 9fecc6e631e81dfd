"""The price table: cost per million tokens by model, ``{config}/billing/prices.yaml``.

Without the file the documented defaults below apply (list prices in USD per million tokens as
the providers published them; check them, they change). Editing the file replaces the table.
A model is priced by the *longest* table key its name starts with (``claude-sonnet-4`` prices
``claude-sonnet-4-5-20250929``); a model no key matches is reported as unpriced, never guessed.
A malformed table is refused with the field at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nika_tui.errors import BillingError
from nika_tui.paths import Roots, roots


class ModelPrice(BaseModel):
    """Cost per million tokens of one model (family): finite numbers, never ``true`` or ``"3"``."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    input: float = Field(ge=0, description="Per million fresh input tokens.")
    output: float = Field(ge=0, description="Per million output tokens.")
    cache_read: float = Field(default=0.0, ge=0, description="Per million cached input tokens.")
    cache_write: float = Field(default=0.0, ge=0, description="Per million cache-write tokens.")


class PriceTable(BaseModel):
    """``schema_version``, ``currency`` and ``models``."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    currency: str = Field(default="USD", min_length=3, max_length=3)
    models: dict[str, ModelPrice]

    def price_for(self, model: str) -> ModelPrice | None:
        """The price of the longest key ``model`` starts with, else ``None``."""
        keys = [k for k in self.models if model.startswith(k)]
        return self.models[max(keys, key=len)] if keys else None

    def cost(self, model: str, tokens: Mapping[str, int]) -> float | None:
        """Cost of one usage record, ``None`` when the model is unpriced."""
        price = self.price_for(model)
        if price is None:
            return None
        return (
            tokens.get("input_tokens", 0) * price.input
            + tokens.get("output_tokens", 0) * price.output
            + tokens.get("cache_read_tokens", 0) * price.cache_read
            + tokens.get("cache_write_tokens", 0) * price.cache_write
        ) / 1_000_000


def _p(i: float, o: float, cr: float = 0.0, cw: float = 0.0) -> ModelPrice:
    return ModelPrice(input=i, output=o, cache_read=cr, cache_write=cw)


DEFAULT_PRICES = PriceTable(
    models={
        "claude-opus-4": _p(15.0, 75.0, 1.5, 18.75),
        "claude-opus-4-5": _p(5.0, 25.0, 0.5, 6.25),
        "claude-sonnet-4": _p(3.0, 15.0, 0.3, 3.75),
        "claude-haiku-4": _p(1.0, 5.0, 0.1, 1.25),
        "claude-3-5-haiku": _p(0.8, 4.0, 0.08, 1.0),
        "gpt-5": _p(1.25, 10.0, 0.125),
        "gpt-5-mini": _p(0.25, 2.0, 0.025),
        "gpt-5-nano": _p(0.05, 0.4, 0.005),
        "gpt-4.1": _p(2.0, 8.0, 0.5),
        "o4-mini": _p(1.1, 4.4, 0.275),
        "gemini-2.5-pro": _p(1.25, 10.0, 0.31),
        "gemini-2.5-flash": _p(0.3, 2.5, 0.075),
    }
)


def prices_path(where: Roots | None = None) -> Path:
    """``{config}/billing/prices.yaml``."""
    return (where or roots()).config / "billing" / "prices.yaml"


def parse_prices(text: str, source: str = "prices.yaml") -> PriceTable:
    """Parse a price table.

    Raises:
        BillingError: Not YAML, or a field is missing / negative / unknown (named).
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BillingError(
            f"{source} is not valid YAML: {_yaml_problem(exc)}", "fix the file"
        ) from exc
    try:
        return PriceTable.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise BillingError(
            f"{source}: {field}: {first['msg']}",
            "each model needs input and output per million tokens, >= 0 (docs/quotas-billing.md)",
        ) from exc


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line: where and what (PyYAML's own text spans several lines)."""
    mark = getattr(exc, "problem_mark", None)
    problem = str(getattr(exc, "problem", None) or type(exc).__name__)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return " ".join(f"{where}{problem}".split())


def load_prices(where: Roots | None = None) -> PriceTable:
    """The configured table, else :data:`DEFAULT_PRICES`."""
    path = prices_path(where)
    if not path.exists():
        return DEFAULT_PRICES
    return parse_prices(path.read_text(encoding="utf-8"), str(path))


def render_prices(table: PriceTable) -> str:
    """YAML of a table (``nika billing prices --init`` writes the defaults with it)."""
    return yaml.safe_dump(table.model_dump(), sort_keys=False)
