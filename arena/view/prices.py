"""Token prices, so the viewer can show what an episode and a run cost: a `prices.toml` in the run
directory or in one of the two directories above it (a demo's or a probe's outputs), stating USD
per million tokens by the model name the trace's calls carry:

    [models."gpt-4.1-mini"]
    input = 0.40          # uncached input tokens
    cached_input = 0.10   # optional; default: the input price
    output = 1.60         # output tokens, reasoning included

No file, no cost: the viewer never guesses a price."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

__all__ = ["PRICES_FILE", "Prices", "find_prices"]

PRICES_FILE = "prices.toml"


class ModelPrice(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input: float
    output: float
    cached_input: float | None = None


class PricesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    models: dict[str, ModelPrice]


@dataclass(frozen=True)
class Prices:
    path: Path
    models: Mapping[str, ModelPrice]

    def cost(self, model: str, usage: Mapping[str, int]) -> float | None:
        """USD for these tokens of `model` (None: no price stated for it, or no tokens recorded)."""
        price = self.models.get(model)
        if price is None or "input" not in usage or "output" not in usage:
            return None
        cached = min(usage.get("cached_input", 0), usage["input"])
        cached_price = price.input if price.cached_input is None else price.cached_input
        return ((usage["input"] - cached) * price.input + cached * cached_price + usage["output"] * price.output) / 1e6


def find_prices(run_dir: Path) -> tuple[Prices | None, str]:
    """The prices that apply to `run_dir` and a warning ('' if none): the nearest `prices.toml`
    in it or the two directories above; a file that does not parse is a warning, not a price."""
    for folder in (run_dir, run_dir.parent, run_dir.parent.parent):
        path = folder / PRICES_FILE
        if not path.is_file():
            continue
        try:
            parsed = PricesFile.model_validate(tomllib.loads(path.read_text()))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValidationError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return None, f"{path} is not a prices file ({first}): no costs shown"
        return Prices(path, parsed.models), ""
    return None, ""
