"""Kernel status codes, and the one function that turns a status into an exception.

Every kernel validates its inputs itself (shapes, finiteness, unit quaternions, loop closure) *before*
it writes anything, and returns an ``int64`` status: 0 on success, else ``kind * STATUS_BASE + index``
where ``index`` says *which* argument, element, body or cluster is at fault. The Python side turns it
into a specific :mod:`loopdyn.errors` exception with :func:`raise_for_status`.
"""

from __future__ import annotations

from ..errors import (
    ConfigurationError,
    DataInUseError,
    InputError,
    LoopdynError,
    NonFiniteError,
    RedundantConstraintsError,
    ShapeError,
    SingularInertiaError,
    UnsupportedFeatureError,
)
from ..jit import lazy_group

STATUS_BASE = 1_000_000

# ---- status kinds --------------------------------------------------------------------------------
BAD_SHAPE = 1  # index = argument position (0 = q, 1 = v, 2 = a/tau, 3 = f_ext)
NOT_FINITE = 11  # kind = 11 + argument position; index = flat element index
BAD_QUAT = 21  # quaternion not unit-norm; index = body
BAD_UNIT_COMPLEX = 22  # (cos, sin) pair of a RevoluteUnbounded joint not unit; index = body
SINGULAR = 23  # articulated inertia not positive definite at body `index`
CONSTRAINT_VIOLATED = 24  # the positions of cluster `index` are off its constraints
SINGULAR_CLUSTER = 25  # K_d of cluster `index` is singular
ORDER_MISMATCH = 26  # higher-order stacks: argument `index` has another number of orders than the first
REDUNDANT_CONSTRAINTS = 27  # Delassus matrix singular (dependent constraint rows, μ = 0); index = row
DAMPED_NOT_PD = 28  # Λ⁻¹ + μ I not positive definite (μ > 0); index = row
DATA_IN_USE = 29  # the Data is in use by a kernel of another thread (algorithms.borrow.acquire)
LOOP_CODE_MISSING = 30  # a lazy pass this model needs is not loaded in this process (loopdyn.jit.lazy)
#: the groups of lazy passes that a call loads when it first needs them (not the Data): a missing
#: pass's LOOP_CODE_MISSING status carries its group's number (loopdyn.jit.lazy_group;
#: algorithms.call.missing_code_loaded)
DEFERRED_LAZY_CODE = frozenset({"loop_derivatives", "loop_rates"})

UNIT_TOL = 1e-6  # tolerance on | |quaternion| - 1 | and | cos² + sin² - 1 |

#: argument names of the state kernels, in their order
STATE_NAMES = ("q", "v", "a", "f_ext")


def raise_for_status(model, status: int, arg_names=STATE_NAMES, sizes=None, shapes=None) -> None:
    """Raise the exception that a kernel's non-zero ``status`` stands for.

    ``arg_names`` names the kernel's user arguments by position (as the kernel numbers them in its
    BAD_SHAPE / NOT_FINITE statuses); ``sizes`` gives the expected sizes of vectors for the message
    (default: q → nq, the others → nv), ``shapes`` the expected shapes of arrays, as text.
    """
    kind, index = divmod(int(status), STATUS_BASE)
    if kind == BAD_SHAPE and shapes is not None:
        raise ShapeError(f"{arg_names[index]} must have shape {shapes[index]}")
    if kind == ORDER_MISMATCH:
        expected = f" (expected shape {shapes[index]})" if shapes is not None else ""
        raise ShapeError(
            f"{arg_names[index]}: its number of derivative orders does not match the other stacks'{expected}"
        )
    if kind == BAD_SHAPE:
        name = arg_names[index]
        if name == "f_ext":
            raise ShapeError(
                f"f_ext must have shape ({model.njoints}, 6) (one row per joint, row 0 = universe)"
            )
        if sizes is None:
            expected = model.nq if index == 0 else model.nv
        else:
            expected = sizes[index]
        raise ShapeError(f"{name} must be a 1-D array of size {expected}")
    if NOT_FINITE <= kind < NOT_FINITE + 9:
        name = arg_names[kind - NOT_FINITE]
        raise NonFiniteError(f"{name} contains NaN or inf (first at flat index {index})")
    if kind == BAD_QUAT:
        b = model.bodies[index - 1]
        raise ConfigurationError(
            f"q: the quaternion of joint {b.joint_name!r} (q[{b.idx_q + (3 if b.joint.nq == 7 else 0)}:"
            f"{b.idx_q + b.joint.nq}]) is not unit-norm within {UNIT_TOL:g}; normalize it "
            "(loopdyn.normalize) — it is not normalized silently"
        )
    if kind == BAD_UNIT_COMPLEX:
        b = model.bodies[index - 1]
        label = model.joint_label(index) if hasattr(model, "joint_label") else repr(b.joint_name)
        raise ConfigurationError(
            f"q: (cos, sin) of continuous joint {label} (q[{b.idx_q}:{b.idx_q + 2}]) is not "
            f"unit-norm within {UNIT_TOL:g}"
        )
    if kind == SINGULAR:
        b = model.bodies[index - 1]
        if model.has_constraints:
            tree = model.clusters()
            for big in tree.clusters:  # its 𝖣 was not inverted: the failure may show at another body
                if big.m > MAX_CLUSTER_DOF:
                    _raise_cluster_too_large(model, big)
            c = tree.clusters[tree.body_cluster[index]]
            if len(c.bodies) > 1:
                _raise_singular_cluster(model, c)
        label = model.joint_label(index) if hasattr(model, "joint_label") else repr(b.joint_name)
        raise SingularInertiaError(
            f"the articulated inertia seen by joint {label} is not positive definite "
            "(a massless subtree, a singular mechanism, or a compound joint at its gimbal lock)"
        )
    if kind == REDUNDANT_CONSTRAINTS:
        raise RedundantConstraintsError(
            "the constraints are redundant (linearly dependent rows, e.g. several contacts on one rigid "
            "link or a constraint on the world): the Delassus matrix is singular; use the damped form, "
            "mu > 0 (e.g. mu=1e-8), or remove the redundant rows"
        )
    if kind == DATA_IN_USE:
        raise DataInUseError(
            f"this Data of model {model.name!r} is in use by a call running in another thread: a Data "
            "is one thread's workspace (the kernels release the GIL and write into it); give each "
            "thread its own, model.create_data() or copy.deepcopy(data)"
        )
    if kind == LOOP_CODE_MISSING:
        group = lazy_group(index)
        named = f" {group!r}" if group else ""
        raise LoopdynError(
            f"the compiled code of model {model.name!r}'s loops or clusters (a lazy pass{named}) is not "
            "loaded in this process: use a Data made by model.create_data() (or a copy or unpickled copy "
            "of one), which loads it"
        )
    if kind == DAMPED_NOT_PD:
        raise InputError("the damped Delassus matrix is not positive definite")
    if kind in (CONSTRAINT_VIOLATED, SINGULAR_CLUSTER):
        c = model.clusters().clusters[index - 1]
        bodies = [model.bodies[b - 1].name for b in c.bodies]
        if kind == CONSTRAINT_VIOLATED:
            raise ConfigurationError(
                f"q: the positions of cluster {bodies} violate its constraints by more than "
                f"{model.constraint_tolerance:g} (model.constraint_tolerance); "
                "(loopdyn.project_configuration moves them onto the constraints)"
            )
        dep = [model.bodies[c.bodies[k] - 1].joint_name for k in c.dependent]
        raise ConfigurationError(
            f"q: cluster {bodies} is at a singular configuration: K_d (dependent joints {dep}) is singular"
        )
    raise InputError(f"kernel failed with status {status}")


#: the most independent coordinates a cluster may have in the algorithms that invert its articulated
#: inertia 𝖣 = 𝖲ᵀ𝖨ᴬ𝖲 (C-ABA and those built on it): :func:`loopdyn.spatial.ops.spd_inverse` is written
#: for the m ≤ 6 of every mechanism the papers treat (fixed 6 × 6 scratch)
MAX_CLUSTER_DOF = 6


def _raise_cluster_too_large(model, c) -> None:
    """A cluster with more than :data:`MAX_CLUSTER_DOF` independent coordinates reached an algorithm that
    inverts its 𝖣 (m × m): not a singular mechanism, an unsupported size — say so and what works."""
    bodies = [model.bodies[b - 1].name for b in c.bodies]
    raise UnsupportedFeatureError(
        f"cluster {bodies} has {c.m} independent coordinates; C-ABA and the algorithms built on it "
        f"(contact dynamics, Delassus matrices, operational-space inertias) invert a cluster's articulated "
        f"inertia of at most {MAX_CLUSTER_DOF} × {MAX_CLUSTER_DOF}. rnea, crba, nonlinear_effects and the "
        "derivatives of rnea work on it; for the accelerations solve crba(q) ÿ = τ − nonlinear_effects(q, ẏ)"
    )


def _raise_singular_cluster(model, c) -> None:
    """The articulated inertia of a multi-body cluster along its independent coordinates is singular
    (C-ABA's 𝖣 = 𝖲ᵀ𝖨ᴬ𝖲 not positive definite): name the cluster, its independent joints and the
    sub-hinge chains (revolutes separated by massless bodies: gimbals, universal joints) it holds,
    whose singularity (two axes aligned) is the usual cause."""
    names = [model.bodies[b - 1].name for b in c.bodies]
    ind = [model.bodies[c.bodies[k] - 1].joint_name for k in c.independent]
    chains = []
    for b in c.bodies:
        body = model.bodies[b - 1]
        if body.inertia.mass == 0.0 and not body.inertia.inertia.any():
            children = [k.joint_name for k in model.bodies if k.parent == b]
            chains.append(f"{body.joint_name}→{'/'.join(children)}" if children else body.joint_name)
    hint = (
        f"; the sub-hinges around its massless bodies ({', '.join(chains)}) may be at a gimbal "
        "singularity (two of their axes aligned)"
        if chains
        else ""
    )
    raise SingularInertiaError(
        f"cluster {names}: the mass matrix of its independent coordinates {ind} is singular at this "
        f"configuration (their motions are dependent, or move no mass){hint}"
    )
