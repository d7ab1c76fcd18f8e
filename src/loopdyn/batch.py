"""Batched dynamics over many states, parallel across cores: ``rnea``, ``aba``, ``crba``."""

from .algorithms.batch import aba, crba, rnea

__all__ = ["aba", "crba", "rnea"]
