"""Flat per-model arrays read by the higher-order kernels, built once per model and cached.

``hb`` (int64, ``(nbodies + 1, HB_N)``): parent, joint type, first q / v index, number of velocity
coordinates (row 0: nbodies, nq, nv). ``hf`` (float64, ``(nbodies + 1, HF_N)``): joint placement in
the parent body (row-major rotation, translation), unit joint axis, mass, centre of mass and
rotational inertia about it in the body frame, armature (row 0: gravity in the world frame).

Only the Model's public attributes are read, so the arrays follow the model's documented semantics
(Pinocchio's: body i moved by joint i, placement then joint motion, inertia in the body frame).
"""

from __future__ import annotations

import weakref

import numpy as np

from ..errors import UnsupportedFeatureError
from ..model.joints import FIXED, FREEFLYER, PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL

# hb columns
HB_PARENT = 0
HB_JTYPE = 1
HB_IQ = 2
HB_IV = 3
HB_NV = 4
HB_N = 5
# hf columns
HF_JR = 0  # 9
HF_JP = 9  # 3
HF_AXIS = 12  # 3
HF_MASS = 15  # 1
HF_COM = 16  # 3
HF_IC = 19  # 9, rotational inertia about the centre of mass, body axes
HF_ARM = 28  # 6
HF_N = 34

SUPPORTED = (REVOLUTE, REVOLUTE_UNBOUNDED, PRISMATIC, SPHERICAL, FREEFLYER)

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def build_arrays(model) -> tuple[np.ndarray, np.ndarray]:
    """``(hb, hf)`` of a tree model (see the module docstring)."""
    nb = len(model.bodies)
    hb = np.zeros((nb + 1, HB_N), dtype=np.int64)
    hf = np.zeros((nb + 1, HF_N), dtype=np.float64)
    hb[0, 0], hb[0, 1], hb[0, 2] = nb, model.spanning_nq, model.spanning_nv
    hf[0, 0:3] = model.gravity
    for i, b in enumerate(model.bodies, start=1):
        code = b.joint.code
        if code == FIXED:  # fixed joints are merged into their parent by the Model; never a body
            raise UnsupportedFeatureError(f"joint {b.joint_name!r}: a fixed joint kept as a body")
        if code not in SUPPORTED:
            raise UnsupportedFeatureError(
                f"joint {b.joint_name!r} ({b.joint.kind}): not supported by loopdyn.higher_order"
            )
        hb[i] = (b.parent, code, b.idx_q, b.idx_v, b.joint.nv)
        hf[i, HF_JR : HF_JR + 9] = np.asarray(b.rotation, float).reshape(-1)
        hf[i, HF_JP : HF_JP + 3] = b.translation
        hf[i, HF_AXIS : HF_AXIS + 3] = b.joint.axis_array()
        hf[i, HF_MASS] = b.inertia.mass
        hf[i, HF_COM : HF_COM + 3] = b.inertia.com
        hf[i, HF_IC : HF_IC + 9] = b.inertia.inertia.reshape(-1)
        hf[i, HF_ARM : HF_ARM + b.joint.nv] = b.armature_vector()
    return hb, hf


def model_arrays(model, data):
    """The cached ``(hb, hf)`` of ``model``, rebuilt when ``data`` comes from a newer model version.
    ``data`` must already have been checked against ``model``."""
    entry = _CACHE.get(model)
    if entry is not None and entry[0] is data.source_key:
        return entry[1], entry[2]
    hb, hf = build_arrays(model)
    _CACHE[model] = (data.source_key, hb, hf)
    return hb, hf
