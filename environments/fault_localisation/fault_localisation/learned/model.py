"""The shipped models of the learned shortcut: the kit's JSON tree ensembles (`arena_kit.adversaries.learned.weights`) read from this package's data."""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path

from arena_kit.adversaries.learned.weights import Model

__all__ = ["shipped", "weights_path"]


def weights_path(variant: str) -> Path:
    """Where the shipped model of `variant` lives in the source tree (the training script writes it)."""
    return Path(__file__).parent / "weights" / f"{variant}.json"


@functools.cache
def shipped(variant: str) -> Model:
    """The model of `variant` shipped as package data."""
    text = resources.files("fault_localisation.learned").joinpath("weights", f"{variant}.json").read_text()
    return Model.from_json(json.loads(text))
