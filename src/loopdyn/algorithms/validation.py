"""Python-side checks shared by the algorithm wrappers (the slow path; kernels validate the rest)."""

from __future__ import annotations

from ..errors import DataMismatchError, UnsupportedFeatureError


def check_data(model, data, clusters_supported: bool = False) -> None:
    """Raise unless ``data`` was created by ``model`` in its current state (and, for algorithms that
    only handle trees, unless the model is a tree)."""
    from ..model.data import Data

    if not isinstance(data, Data):
        raise DataMismatchError(f"expected a loopdyn Data (model.create_data()), got {type(data).__name__}")
    if model.has_constraints and data.source_key is model._key and not clusters_supported:
        raise UnsupportedFeatureError(
            f"model {model.name!r} has loops or couplings: this function handles kinematic trees only; "
            "use loopdyn.spanning_tree(model) with loopdyn.to_spanning(model, q, v) for the spanning tree"
        )
    if data.source_key is not model._key:
        raise DataMismatchError(
            f"this Data was created for model {data.model_name!r} before its last change, or for another "
            f"model; call model.create_data() again for {model.name!r}"
        )
