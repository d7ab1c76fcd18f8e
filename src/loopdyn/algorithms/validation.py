"""Python-side checks shared by the public functions (the kernels validate the arrays themselves)."""

from __future__ import annotations

from ..errors import DataMismatchError, UnsupportedFeatureError
from ..model.data import Data


def check_data(model, data) -> None:
    """Raise unless ``data`` was created by ``model`` in its current state.

    The public functions call this only when ``data.source_key is not model._key`` (the fast check),
    so it always raises; it says why."""
    if not isinstance(data, Data):
        raise DataMismatchError(f"expected a loopdyn Data (model.create_data()), got {type(data).__name__}")
    if data.source_key is not model._key:
        raise DataMismatchError(
            f"this Data was created for model {data.model_name!r} before its last change, or for another "
            f"model; call model.create_data() again for {model.name!r}"
        )


def require_tree(model, what: str) -> None:
    """Raise unless ``model`` is a kinematic tree (no loops, no couplings)."""
    if model.has_constraints:
        raise UnsupportedFeatureError(
            f"model {model.name!r} has loops or couplings: {what} handles kinematic trees only; "
            "use loopdyn.spanning_tree(model) with loopdyn.to_spanning(model, q, v) for the spanning tree"
        )
