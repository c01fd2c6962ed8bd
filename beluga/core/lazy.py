"""``torch``, imported when first used: modules that the DAG needs while it is
built (the method registry: names, defaults, start methods) can be imported by
``rules/common.smk`` without paying torch's import (about a second, in every
snakemake invocation and every cluster job)."""

from __future__ import annotations

import importlib


class _LazyModule:
    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


torch = _LazyModule("torch")
#: LoRA (beluga/methods/lora.py): imported only by a process that trains with it
peft = _LazyModule("peft")
