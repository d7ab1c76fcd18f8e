"""Python-side checks shared by the algorithm wrappers (the slow path; kernels validate the rest)."""

from __future__ import annotations

from ..errors import DataMismatchError


def check_data(model, data) -> None:
    """Raise unless ``data`` was created by ``model`` in its current state."""
    from ..model.data import Data

    if not isinstance(data, Data):
        raise DataMismatchError(f"expected a loopdyn Data (model.create_data()), got {type(data).__name__}")
    if data.model_key is not model._key:
        raise DataMismatchError(
            f"this Data was created for model {data.model_name!r} before its last change, or for another "
            f"model; call model.create_data() again for {model.name!r}"
        )
