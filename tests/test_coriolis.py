"""The Coriolis matrix, Ṁ and the Christoffel symbols (``loopdyn.coriolis_matrix``,
``loopdyn.mass_matrix_derivative``, ``loopdyn.christoffel``; issue #31 item 4), against independent
oracles:

* trees: Pinocchio's ``computeCoriolisMatrix`` on every random tree and example-robot-data robot of
  the suite (free flyers, ball, prismatic, unbounded joints), ≤ 1e-9 relative;
* every model — trees, the built-in robots with geared rotors and belts, implicit loops (four-, five-
  bar, RSSR, the delta robot, Tello's differentials), random cluster models — identities:
  ``Ṁ − 2C`` skew (both from their own recursions) and ``C v + g = nonlinear_effects`` ≤ 1e-12 of
  the scale ``max|M| · max|v|``, ``Σ_k Γ[:, :, k] v_k = C``; Ṁ against 4th-order central differences
  of the verified ``crba`` along ``integrate(q, t v)`` (on loops the loop's motion) ≤ 1e-7;
* fixed-base models: the (j, k)-symmetrised Γ against ½(∂M_ij/∂q_k + ∂M_ik/∂q_j − ∂M_jk/∂q_i) from
  differences of ``crba``;
* implicit loops: C_y against a dense ``Gᵀ(C_s G + M_s Ġ)`` with G from ``to_spanning`` and Ġ from
  central differences of G along the motion, C_s, M_s of ``spanning_tree(model)``; negative control:
  without ``M_s Ġ`` the skew test fails;
* ``loopdyn.batch`` versions equal the single-state functions; bad input raises ``loopdyn.errors``.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from cluster_models import random_cluster_model, two_output_model

import loopdyn as ld
from loopdyn.errors import ConfigurationError, DataMismatchError, NonFiniteError, ShapeError

N_STATES = 3
RTOL_PIN = 1e-9
RTOL_ID = 1e-12
RTOL_FD = 1e-7
H = 1e-4  # step of the 4th-order central differences

LOOP_ROBOTS = {
    "four_bar": lambda: ld.robots.four_bar(),
    "five_bar": lambda: ld.robots.five_bar(),
    "planar_leg_linkage": lambda: ld.robots.planar_leg_linkage(),
    "rssr_linkage": lambda: ld.robots.build("rssr_linkage"),
    "delta_robot": lambda: ld.robots.build("delta_robot"),
    "tello": lambda: ld.robots.tello(),
    "mini_cheetah": lambda: ld.robots.mini_cheetah(),
    "mit_humanoid": lambda: ld.robots.mit_humanoid(),
    "mit_humanoid_leg": lambda: ld.robots.mit_humanoid_leg(),
    "jvrc1": lambda: ld.robots.jvrc1(),  # its spanning matrices do not fit the stack: the heap path
    "gt_chain": lambda: ld.robots.gt_chain(4),
    "pbt_chain": lambda: ld.robots.pbt_chain(4),
    "random_loops_fixed": lambda: random_cluster_model(
        7, 4, False, ("fourbar", "differential", "geared"), plain=("revolute", "prismatic")
    ),
    "random_loops_floating": lambda: random_cluster_model(8, 4, True),
    "five_bar_armature": lambda: with_armature(ld.robots.five_bar()),  # armature enters M_s Ġ
    "mini_cheetah_armature": lambda: with_armature(ld.robots.mini_cheetah()),
}
IMPLICIT = ["four_bar", "five_bar", "five_bar_armature", "planar_leg_linkage", "rssr_linkage", "delta_robot",
            "tello", "random_loops_fixed", "random_loops_floating"]  # fmt: skip
FIXED_BASE = ["four_bar", "five_bar", "planar_leg_linkage", "rssr_linkage", "delta_robot",
              "mit_humanoid_leg", "gt_chain", "pbt_chain", "random_loops_fixed"]  # fmt: skip
# implicit loops whose Gᵀ M_s Ġ has a symmetric part (in parallelograms — four_bar, the planar leg's
# shank, the random models' four-bars — H is constant and that part vanishes)
NEGATIVE = ["five_bar", "five_bar_armature", "rssr_linkage", "delta_robot", "tello", "random_loops_fixed"]

_MODELS: dict[str, ld.Model] = {}


def with_armature(model: ld.Model) -> ld.Model:
    """``model`` with a random armature on every spanning coordinate."""
    model.armature = np.random.default_rng(43).uniform(0.05, 0.5, size=model.spanning_nv)
    return model


def loop_model(name: str) -> ld.Model:
    if name not in _MODELS:
        _MODELS[name] = LOOP_ROBOTS[name]()
    return _MODELS[name]


def states(model, n: int, seed: int):
    rng = np.random.default_rng(seed)
    return [(ld.random_configuration(model, rng=rng), rng.normal(size=model.nv)) for _ in range(n)]


def rel_error(actual, expected, scale: float = 0.0) -> float:
    return float(np.max(np.abs(actual - expected)) / max(np.max(np.abs(expected)), scale, 1e-300))


def central(f, h: float = H):
    """4th-order central difference of ``f(t)`` at t = 0."""
    return (-f(2 * h) + 8 * f(h) - 8 * f(-h) + f(-2 * h)) / (12 * h)


# ------------------------------------------------------------------------------------------------
# trees against Pinocchio


def test_coriolis_matches_pinocchio(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    data, pd = lm.create_data(), pm.createData()
    for s, (q, v, _) in enumerate(pin_case.states(N_STATES, salt=31)):
        C = ld.coriolis_matrix(lm, data, q, v)
        Cp = pin.computeCoriolisMatrix(pm, pd, q, v)
        # a matrix that is zero (one joint) has no scale of its own: |M| |v| is the model's
        err = rel_error(C, Cp, 1e-3 * np.abs(ld.crba(lm, data, q)).max() * np.abs(v).max())
        assert err <= RTOL_PIN, f"{pin_case.name}, state {s}: relative error {err:.2e}"


# ------------------------------------------------------------------------------------------------
# identities on every model


def check_identities(model, q, v, what: str) -> None:
    data = model.create_data()
    C = ld.coriolis_matrix(model, data, q, v)
    Md = ld.mass_matrix_derivative(model, data, q, v)
    M = ld.crba(model, data, q)
    scale = np.abs(M).max() * max(np.abs(v).max(), 1e-300)
    S = Md - 2.0 * C
    assert np.abs(S + S.T).max() <= RTOL_ID * scale, f"{what}: Ṁ − 2C not skew"
    assert np.abs(Md - Md.T).max() <= RTOL_ID * scale, f"{what}: Ṁ not symmetric"
    nle, g = ld.nonlinear_effects(model, data, q, v), ld.gravity(model, data, q)
    err = rel_error(C @ v + g, nle, scale * np.abs(v).max())
    assert err <= RTOL_ID, f"{what}: C v + g ≠ nle ({err:.2e})"
    fd = central(lambda t: ld.crba(model, data, ld.integrate(model, q, t * v)))
    err = rel_error(Md, fd, scale)
    assert err <= RTOL_FD, f"{what}: Ṁ against differences of crba: {err:.2e}"
    Gam = ld.christoffel(model, data, q)
    err = rel_error(np.einsum("ijk,k->ij", Gam, v), C, scale)
    assert err <= RTOL_ID, f"{what}: Σ Γ v ≠ C ({err:.2e})"


def test_identities_trees(any_case):
    for s, (q, v, _) in enumerate(any_case.states(2, salt=32)):
        check_identities(any_case.lm, q, v, f"{any_case.name}, state {s}")


@pytest.mark.parametrize("name", list(LOOP_ROBOTS))
def test_identities_loops(name):
    model = loop_model(name)
    for s, (q, v) in enumerate(states(model, 2, 33)):
        check_identities(model, q, v, f"{name}, state {s}")


def test_mdot_differences_are_not_vacuous():
    """Negative control of the difference check: Ṁ with the M_s Ġ parts dropped (Gᵀ Ṁ_s G alone, on
    an implicit loop) is off by much more than the tolerance."""
    model = loop_model("five_bar")
    q, v = states(model, 1, 34)[0]
    data = model.create_data()
    Md = ld.mass_matrix_derivative(model, data, q, v)
    G, Ms, Cs = dense_terms(model, q, v)[:3]
    st = ld.spanning_tree(model)
    qs, vs = ld.to_spanning(model, q, v)
    partial = G.T @ ld.mass_matrix_derivative(st, st.create_data(), qs, vs) @ G
    fd = central(lambda t: ld.crba(model, data, ld.integrate(model, q, t * v)))
    assert rel_error(Md, fd) <= RTOL_FD
    assert rel_error(partial, fd) > 1e-3


# ------------------------------------------------------------------------------------------------
# Christoffel symbols of fixed-base models against differences of the mass matrix


def check_christoffel_classical(model, q, what: str) -> None:
    data = model.create_data()
    n = model.nv

    def along(k):
        return central(lambda t: ld.crba(model, data, ld.integrate(model, q, t * np.eye(n)[k])))

    dM = np.stack([along(k) for k in range(n)], axis=2)  # dM[i, j, k] = ∂M_ij/∂q_k
    classical = 0.5 * (dM + dM.transpose(0, 2, 1) - dM.transpose(2, 0, 1))
    Gs = ld.christoffel(model, data, q, symmetric=True)
    scale = np.abs(ld.crba(model, data, q)).max()  # Γ ~ ∂M/∂q: M per unit of q
    err = rel_error(Gs, classical, scale)
    assert err <= RTOL_FD, f"{what}: symmetric Γ against ½(∂M_ij/∂q_k + ∂M_ik/∂q_j − ∂M_jk/∂q_i): {err:.2e}"
    G = ld.christoffel(model, data, q)
    # fixed base, 1-DoF joints: the returned Γ is itself symmetric in (j, k), the classical one
    err = rel_error(G, classical, scale)
    assert err <= RTOL_FD, f"{what}: Γ against the classical formula: {err:.2e}"
    # the symmetric choice is admissible too here (true coordinates): Ṁ − 2 C_sym skew
    v = np.random.default_rng(35).normal(size=n)
    Csym = np.einsum("ijk,k->ij", Gs, v)
    S = ld.mass_matrix_derivative(model, data, q, v) - 2.0 * Csym
    assert np.abs(S + S.T).max() <= 1e-12 * scale * np.abs(v).max(), what


def fixed_base_trees(case) -> bool:
    from loopdyn.model import joints as J

    return all(b.joint.code in (J.REVOLUTE, J.PRISMATIC) for b in case.lm.bodies)


def test_christoffel_classical_trees(tree_case):
    if not fixed_base_trees(tree_case):
        # a free flyer, ball or unbounded joint: tangent velocities, the classical formula gains
        # bracket terms; Γ is checked by Σ Γ v = C (test_identities_trees) there
        return
    for s, (q, _, _) in enumerate(tree_case.states(1, salt=36)):
        check_christoffel_classical(tree_case.lm, q, f"{tree_case.name}, state {s}")


@pytest.mark.parametrize("name", FIXED_BASE)
def test_christoffel_classical_loops(name):
    model = loop_model(name)
    q, _ = states(model, 1, 37)[0]
    check_christoffel_classical(model, q, name)


@pytest.mark.parametrize("name", ["solo12", "tello"])
def test_christoffel_not_symmetric_with_a_free_flyer(name):
    """With a free flyer (body-frame twist) the returned Γ is not symmetric in (j, k) (the docstring
    says so): the symmetric option is then another matrix, with the same Σ_jk Γ_ijk v_j v_k."""
    if name == "solo12":
        path, floating = ld.robots.example_robot_urdf("solo12")
        model = ld.load_urdf(path, floating_base=floating)
    else:
        model = loop_model(name)
    data = model.create_data()
    q, v = states(model, 1, 38)[0]
    G = ld.christoffel(model, data, q)
    Gs = ld.christoffel(model, data, q, symmetric=True)
    scale = np.abs(ld.crba(model, data, q)).max()
    assert np.abs(G - G.transpose(0, 2, 1)).max() > 1e-3 * scale
    assert np.abs(Gs - Gs.transpose(0, 2, 1)).max() == 0.0
    quad = np.einsum("ijk,j,k->i", G, v, v)
    assert rel_error(np.einsum("ijk,j,k->i", Gs, v, v), quad, scale) <= RTOL_ID


# ------------------------------------------------------------------------------------------------
# implicit loops: a dense oracle, and the negative control of the skew test


def spanning_g(model, q) -> np.ndarray:
    """G (nv_s × nv) column by column: the spanning velocity of each unit ẏ (q̇_s = G ẏ is linear)."""
    return np.stack([ld.to_spanning(model, q, e)[1] for e in np.eye(model.nv)], axis=1)


def dense_terms(model, q, v):
    """G, M_s, C_s (of spanning_tree(model) at the spanning state) and Ġ from central differences of G
    along integrate(q, t v)."""
    st = ld.spanning_tree(model)
    sd = st.create_data()
    qs, vs = ld.to_spanning(model, q, v)
    G = spanning_g(model, q)
    Gdot = central(lambda t: spanning_g(model, ld.integrate(model, q, t * v)))
    return G, ld.crba(st, sd, qs), ld.coriolis_matrix(st, sd, qs, vs), Gdot


@pytest.mark.parametrize("name", IMPLICIT)
def test_loops_against_dense_formula(name):
    model = loop_model(name)
    data = model.create_data()
    for q, v in states(model, 2, 39):
        G, Ms, Cs, Gdot = dense_terms(model, q, v)
        C = ld.coriolis_matrix(model, data, q, v)
        dense = G.T @ (Cs @ G + Ms @ Gdot)
        scale = np.abs(ld.crba(model, data, q)).max() * np.abs(v).max()
        assert rel_error(C, dense, scale) <= RTOL_FD, name
        if name in NEGATIVE:  # negative control: without M_s Ġ, Ḣ − 2C is not skew
            partial = G.T @ Cs @ G
            S = ld.mass_matrix_derivative(model, data, q, v) - 2.0 * partial
            assert np.abs(S + S.T).max() > 1e-6 * scale, f"{name}: the skew test passes without M_s Ġ"


@pytest.mark.parametrize("name", ["two_outputs", "random_explicit"])
def test_explicit_clusters_equal_the_dense_congruence(name):
    """Explicit clusters (G constant, Ġ = 0): C_y = Gᵀ C_s G and Ḣ = Gᵀ Ṁ_s G exactly, from the
    spanning tree's own C_s, Ṁ_s — on a model whose declared cluster leaves its parent through two
    bodies (walked body by body) and on random geared and belt clusters hanging from each other."""
    if name == "two_outputs":
        model = two_output_model()
    else:
        model = random_cluster_model(21, 6, True, ("geared", "belt"))
    data = model.create_data()
    st = ld.spanning_tree(model)
    sd = st.create_data()
    for s, (q, v) in enumerate(states(model, 2, 40)):
        G = spanning_g(model, q)
        assert G.shape[0] > G.shape[1]
        qs, vs = ld.to_spanning(model, q, v)
        C = ld.coriolis_matrix(model, data, q, v)
        assert rel_error(C, G.T @ ld.coriolis_matrix(st, sd, qs, vs) @ G) <= RTOL_ID, f"{name}, state {s}: C"
        Md = ld.mass_matrix_derivative(model, data, q, v)
        Mds = ld.mass_matrix_derivative(st, sd, qs, vs)
        assert rel_error(Md, G.T @ Mds @ G) <= RTOL_ID, f"{name}, state {s}: Ṁ"


# ------------------------------------------------------------------------------------------------
# batches


@pytest.mark.parametrize("name", ["solo12", "five_bar", "mini_cheetah", "jvrc1"])
def test_batch_equals_single(name):
    if name == "solo12":
        path, floating = ld.robots.example_robot_urdf("solo12")
        model = ld.load_urdf(path, floating_base=floating)
    else:
        model = loop_model(name)
    data = model.create_data()
    rows = states(model, 70, 40)
    Q = np.stack([q for q, _ in rows])
    V = np.stack([v for _, v in rows])
    C = ld.batch.coriolis_matrix(model, Q, V)
    Md = ld.batch.mass_matrix_derivative(model, Q, V)
    for k in range(len(rows)):
        single = ld.coriolis_matrix(model, data, Q[k], V[k])
        # the same cores; the batch kernel's own compilation may contract other products (FMA)
        assert rel_error(C[k], single) <= 1e-14, (name, k)
        assert rel_error(Md[k], ld.mass_matrix_derivative(model, data, Q[k], V[k])) <= 1e-14, (name, k)


def test_batch_bad_row():
    model = loop_model("five_bar")
    rows = states(model, 5, 41)
    Q = np.stack([q for q, _ in rows])
    V = np.stack([v for _, v in rows])
    V[3, 1] = np.nan
    with pytest.raises(NonFiniteError, match="row 3"):
        ld.batch.coriolis_matrix(model, Q, V)
    with pytest.raises(ShapeError):
        ld.batch.coriolis_matrix(model, Q, V[:, :1])


# ------------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("name", ["five_bar", "tree"])
def test_bad_input(name):
    if name == "tree":
        path, floating = ld.robots.example_robot_urdf("solo12")
        model = ld.load_urdf(path, floating_base=floating)
    else:
        model = loop_model(name)
    data = model.create_data()
    q, v = states(model, 1, 42)[0]
    good = ld.coriolis_matrix(model, data, q, v)
    for f in (ld.coriolis_matrix, ld.mass_matrix_derivative):
        with pytest.raises(ShapeError, match="v"):
            f(model, data, q, v[:-1])
        with pytest.raises(ShapeError, match="q"):
            f(model, data, q[:-1], v)
        bad = v.copy()
        bad[0] = np.inf
        with pytest.raises(NonFiniteError, match="v"):
            f(model, data, q, bad)
    with pytest.raises(NonFiniteError, match="q"):
        ld.christoffel(model, data, np.full_like(q, np.nan))
    with pytest.raises(DataMismatchError):
        ld.coriolis_matrix(model, loop_model("four_bar").create_data(), q, v)
    if name == "five_bar":
        off = q.copy()
        off[-1] += 0.3  # a dependent angle off the loop
        with pytest.raises(ConfigurationError):
            ld.coriolis_matrix(model, data, off, v)
        with pytest.raises(ConfigurationError):
            ld.christoffel(model, data, off)
    # the Data stays usable, lists are accepted
    assert np.array_equal(ld.coriolis_matrix(model, data, list(q), list(v)), good)


# ------------------------------------------------------------------------------------------------
# the documentation's Coriolis section runs as written, and its claims hold


def test_readme_section():

    from doc_pages import code_blocks

    (code,) = code_blocks("tutorials/identification", "## Coriolis matrix and Christoffel symbols")
    ns: dict = {"np": np, "ld": ld}
    exec(compile(code, "docs/tutorials/identification.md", "exec"), ns)
    q, v, C = ns["q"], ns["v"], ns["C"]
    path, _ = ld.robots.example_robot_urdf("solo12")
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    assert rel_error(C, pin.computeCoriolisMatrix(pm, pm.createData(), q, v)) <= RTOL_PIN
    assert rel_error(np.einsum("ijk,k->ij", ns["Gamma"], v), C) <= RTOL_ID
    skew, td = ns["skew"], ns["td"]
    scale = np.abs(ld.crba(ns["tello"], td, ns["y"])).max() * np.abs(ns["yd"]).max()
    assert np.abs(skew + skew.T).max() <= RTOL_ID * scale
