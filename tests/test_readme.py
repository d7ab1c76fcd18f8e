"""The README's tour and the documentation's tutorials run as written, and their claims hold.

The tutorials are pages of the documentation site (``docs/tutorials/*.md``, executed at every build by
``tests/test_docs.py``); here their code runs again and its results are compared with independent
oracles (Pinocchio, MuJoCo-free dense formulas).
"""

from __future__ import annotations

import numpy as np
from doc_pages import code_blocks, page_text, run


def test_readme_tour_runs():
    import pinocchio as pin
    import trees
    from loop_oracles import SpanningPinocchio

    import loopdyn as ld

    blocks = code_blocks("README", "## A tour", executed=False)
    assert len(blocks) == 1
    ns = run("README", "## A tour", executed=False)
    robot, q, v, a, tau = ns["robot"], ns["q"], ns["v"], ns["a"], ns["tau"]
    assert (robot.nq, robot.nv) == (25, 24) and ns["H"].shape == (24, 24) and ns["W"].shape == (9, 9)
    # "C-ABA: gives back a"
    assert np.abs(ns["ddq"] - a).max() < 1e-9 * max(1.0, np.abs(a).max())
    # the values, against Pinocchio alone on the spanning tree: H = GᵀH_spanG, the feet held still by
    # one KKT solve, and W = J H⁻¹ Jᵀ with J = J_span G
    oracle = SpanningPinocchio(robot)
    ddq, forces = oracle.forward_dynamics(q, v, tau, ns["feet"])
    G = oracle.coupling_G()
    H = G.T @ oracle.last["M"] @ G
    assert np.abs(ns["H"] - H).max() < 1e-12 * np.abs(H).max()
    J = oracle.last["Jc"] @ G
    W = J @ np.linalg.solve(H, J.T)
    assert np.abs(ns["W"] - W).max() < 1e-10 * np.abs(W).max()
    assert np.abs(ns["ddq_held"] - ddq).max() < 1e-9 * max(1.0, np.abs(ddq).max())
    assert np.abs(ns["forces"] - forces).max() < 1e-9 * max(1.0, np.abs(forces).max())
    # "N·m the approximation misses": the approximate model's torque differs by a visible amount (the
    # rotors' gyroscopic terms), and is not a different robot (same order of magnitude as τ)
    missed = np.abs(ns["approx"].torque_to_model(ns["tau_approx"], q) - tau).max()
    assert 1e-3 < missed < np.abs(tau).max()
    # the batch against Pinocchio's RNEA of the same file (solo12: same joint order)
    pm = trees.robot_case("solo12")[1]
    pd, zero = pm.createData(), np.zeros(pm.nv)
    assert ns["taus"].shape == (1000, 18)
    for k in (0, 499, 999):
        ref = pin.rnea(pm, pd, ns["Q"][k], zero, zero)
        assert np.abs(ns["taus"][k] - ref).max() < 1e-10 * np.abs(ref).max()
    assert ns["solo"].nv == 18 and isinstance(ns["solo"], ld.Model)


def test_readme_dask_section_runs():
    """The README's Dask example, after the tour: the same torques as the NumPy batch, bit for bit."""
    ns = run("README", "## A tour", executed=False)
    run("README", "## More states", ns=ns, executed=False)
    import dask.array as da

    assert isinstance(ns["taus_lazy"], da.Array) and ns["taus_lazy"].numblocks == (4, 1)
    assert np.array_equal(ns["taus_dask"], ns["taus"])


def test_tree_and_sdf_sections_run():
    import pinocchio as pin
    import trees

    ns = run("tutorials/trees")
    assert ns["forces"].shape == (12,) and ns["taus"].shape == (1000, 18)
    # the values, against Pinocchio on solo12 (same joint order): the batch's gravity torques, and the
    # first block's τ, M, M⁻¹ and foot Jacobian
    pm = trees.robot_case("solo12")[1]
    pd, zero = pm.createData(), np.zeros(pm.nv)
    for k in (0, 499, 999):
        ref = pin.rnea(pm, pd, ns["Q"][k], zero, zero)
        assert np.abs(ns["taus"][k] - ref).max() < 1e-10 * np.abs(ref).max()
    q, tau = ns["q"], ns["tau"]
    assert not np.any(ns["v"]) and not np.any(ns["a"])
    ref = pin.rnea(pm, pd, q, zero, zero)
    assert np.abs(tau - ref).max() < 1e-10 * np.abs(ref).max()
    M = pin.crba(pm, pd, q)
    M = np.triu(M) + np.triu(M, 1).T
    assert np.abs(ns["M"] - M).max() < 1e-12 * np.abs(M).max()
    Minv = np.linalg.inv(M)
    assert np.abs(ns["Minv"] - Minv).max() < 1e-12 * np.linalg.cond(M) * np.abs(Minv).max()
    pin.computeJointJacobians(pm, pd, q)
    pin.updateFramePlacements(pm, pd)
    J = pin.getFrameJacobian(pm, pd, pm.getFrameId("FL_FOOT"), pin.LOCAL_WORLD_ALIGNED)
    assert np.abs(ns["J"] - J).max() < 1e-12 * np.abs(J).max()
    # "standing on its feet" with τ the gravity torques at rest: nothing moves, the feet carry nothing
    assert np.abs(ns["ddq"]).max() < 1e-9 and np.abs(ns["forces"]).max() < 1e-9 * np.abs(tau).max()

    ns = run("tutorials/robot-files", "## SDF files", ns)
    model = ns["model"]
    assert ns["ddq"].shape == (model.nv,) and model.sdf_cut_joints
    # Cassie falling from neutral at rest: the dynamics from Pinocchio's CRBA and RNEA on the spanning
    # tree, projected on the loops' velocity map G (Gᵀ (M_span a_span + b_span) = Gᵀ τ_span = 0 with
    # a_span = G ÿ + g; G and g from loopdyn.to_spanning, the kinematics tests/test_clusters.py checks;
    # Pinocchio and loop_oracles have no rows for Cassie's prismatic loop joints, and the projection
    # baseline of tests/test_sdf.py takes 30 s to build here)
    from test_spatial_operators_loops import to_pinocchio

    import loopdyn as ld

    pm, qmap, vmap, _ = to_pinocchio(ld.spanning_tree(model))
    pm.gravity = pin.Motion(np.r_[model.gravity, np.zeros(3)])
    pd = pm.createData()
    q, zero = ld.neutral(model), np.zeros(model.nv)
    G = np.column_stack([ld.to_spanning(model, q, e)[1] for e in np.eye(model.nv)])
    qs, vs, a_span = ld.to_spanning(model, q, zero, ns["ddq"])
    assert not np.any(vs)
    Mp = pin.crba(pm, pd, qs[qmap])
    Ms = np.zeros((model.spanning_nv,) * 2)
    Ms[np.ix_(vmap, vmap)] = np.triu(Mp) + np.triu(Mp, 1).T
    bs = np.zeros(model.spanning_nv)
    bs[vmap] = pin.rnea(pm, pd, qs[qmap], np.zeros(pm.nv), np.zeros(pm.nv))
    residual = G.T @ (Ms @ a_span + bs)
    gravity = G.T @ bs  # negative control: ÿ = 0 leaves the projected gravity
    assert np.abs(gravity).max() > 1.0
    assert np.abs(residual).max() < 1e-9 * np.abs(gravity).max(), np.abs(residual).max()


def test_robot_with_loops_tutorial_runs():
    ns = run("tutorials/loops", "## A robot with loops")
    # "C-ABA: gives back a" and H's size (the page's own ddq)
    assert np.abs(ns["ddq"] - ns["a"]).max() < 1e-9 * max(1.0, np.abs(ns["a"]).max())
    assert ns["H"].shape == (24, 24)
    H_loops = ns["H"]
    # the contacts page starts from the same robot and state
    ns = run("tutorials/contacts")
    assert np.array_equal(ns["H"], H_loops)
    # what the comments say
    assert np.allclose(ns["ddq"].shape, (ns["robot"].nv,))
    assert ns["H"].shape == (24, 24) and ns["W"].shape == (9, 9) and ns["J"].shape == (9, 24)
    assert np.abs(ns["W"] - ns["J"] @ np.linalg.solve(ns["H"], ns["J"].T)).max() < 1e-10
    assert ns["forces"].shape == (9,)
    # the values, against Pinocchio alone on the spanning tree (loop_oracles): G from the couplings'
    # ratios, H = GᵀH_spanG, J = J_span G, and the feet held still by one KKT solve
    from loop_oracles import SpanningPinocchio

    robot, q, v, tau = ns["robot"], ns["q"], ns["v"], ns["tau"]
    oracle = SpanningPinocchio(robot)
    ddq, forces = oracle.forward_dynamics(q, v, tau, ns["feet"])
    G = oracle.coupling_G()
    H = G.T @ oracle.last["M"] @ G
    assert np.abs(ns["H"] - H).max() < 1e-12 * np.abs(H).max()
    assert np.abs(ns["J"] - oracle.last["Jc"] @ G).max() < 1e-12 * max(1.0, np.abs(ns["J"]).max())
    assert np.abs(ns["ddq"] - ddq).max() < 1e-9 * max(1.0, np.abs(ddq).max())
    assert np.abs(ns["forces"] - forces).max() < 1e-9 * max(1.0, np.abs(forces).max())
    # H a + C = τ with H from Pinocchio: the rnea / crba pair of the page is consistent
    import loopdyn as ld

    C = ld.nonlinear_effects(robot, robot.create_data(), q, v)
    assert np.abs(H @ ns["a"] + C - tau).max() < 1e-9 * max(1.0, np.abs(tau).max())


def test_compound_joints_section_runs():
    ns = run("tutorials/joints")
    # what the comments say
    assert [r.joint.kind for r in ns["wrist"].compound_joints] == ["universal"]
    assert ns["wrist"].velocity_names == ["wrist_yaw[0]", "wrist_yaw[1]"]
    assert ns["two"].nq == ns["wrist"].nq == ns["part"].nq == 2
    for x in ns["ddq"][1:]:
        assert np.array_equal(x, ns["ddq"][0])
    for x in ns["M"][1:]:
        assert np.array_equal(x, ns["M"][0])
    # the values: Pinocchio's model of the same URDF
    import pinocchio as pin

    pm = pin.buildModelFromXML(ns["urdf"])
    pd = pm.createData()
    M = pin.crba(pm, pd, ns["q"])
    M = np.triu(M) + np.triu(M, 1).T
    assert np.abs(ns["M"][0] - M).max() < 1e-12 * np.abs(M).max()
    ddq = pin.aba(pm, pd, ns["q"], ns["v"], ns["tau"])
    assert np.abs(ns["ddq"][0] - ddq).max() < 1e-13 * np.linalg.cond(M) * np.abs(ddq).max()
    names = ns["arm"].velocity_names
    assert names[:4] == ["slide[0]", "slide[1]", "slide[2]", "hip[0]"] and names[-1] == "wrist[1]"
    # the table lists every joint type exported by loopdyn
    text = page_text("tutorials/joints")
    table = text[text.index("# Joint types") : text.index("The last four are")]
    for joint in ("Revolute", "RevoluteUnbounded", "Prismatic", "Spherical", "FreeFlyer", "Fixed",
                  "Universal", "Gimbal", "Planar", "Compound"):
        assert f"`{joint}(" in table and hasattr(ns["ld"], joint)


def test_loops_page_four_bar_and_rssr_cells():
    import loopdyn as ld

    ns = run("tutorials/loops", "## Loops and actuation")
    m, q = ns["m"], ns["q"]
    # "Newton onto φ(q) = 0": the projected configuration closes the loop, the perturbed one did not
    assert np.abs(ld.constraint_residual(m, q)).max() < 1e-10
    assert np.abs(ld.constraint_residual(m, ns["q_perturbed"])).max() > 1e-5
    assert ns["q_span"].shape == (ns["tree"].nq,) and ns["v_span"].shape == (ns["tree"].nv,)
    ns = run("tutorials/loops", "## Ball joints inside loops", ns)
    assert ns["rssr"].nv == 2  # "a spatial four-bar, 2 DoF"


def test_batch_page_claims():
    ns = run("tutorials/batch")
    assert np.abs(ns["DDQ"] - ns["A"]).max() < 1e-9 * max(1.0, np.abs(ns["A"]).max())  # gives back A
    assert ns["H"].shape == (200, 18, 18)
    for i in (0, 7, 199):  # "the rows agree with the single-state functions"
        import loopdyn as ld

        cheetah = ns["cheetah"]
        tau = ld.rnea(cheetah, cheetah.create_data(), ns["Q"][i], ns["V"][i], ns["A"][i])
        assert np.array_equal(ns["TAU"][i], tau)
    assert all(np.array_equal(ns["threaded"][i], ns["serial"][i]) for i in range(ns["n"]))


def test_getting_started_first_calls():
    ns = run("getting-started")
    assert np.abs(ns["ddq"]).max() < 1e-9  # "≈ 0": gravity torques hold the robot still
