"""The kernels: Numba cores and their checking entry points, one module per algorithm family.

Nothing here is called by users directly: the public functions (:mod:`loopdyn.dynamics`,
:mod:`loopdyn.kinematics`, :mod:`loopdyn.delassus_methods`, :mod:`loopdyn.contact`, :mod:`loopdyn.batch`,
:mod:`loopdyn.constraint_rows`) validate, choose the tree or cluster kernel, and run it through
:func:`.call.run`.

Shared pieces

* :mod:`.common` — in-kernel validation, joint calculations (``jcalc``), ``S x`` / ``Sᵀ f``, the
  lazily compiled ``kernel`` decorator;
* :mod:`.status` — every kernel status code and :func:`~.status.raise_for_status`;
* :mod:`.call` — :func:`~.call.run`: the fast path, coercion on a type mismatch, status → exception;
* :mod:`.validation` — Python-side checks (the Data belongs to the model; the model is a tree).

Kinematic trees

* :mod:`.rnea` — inverse dynamics (RNEA, RBDA Table 5.1);
* :mod:`.aba` — forward dynamics (ABA, RBDA Table 7.1), and the bias-free articulated-body steps
  shared by the Delassus kernels;
* :mod:`.crba` — mass matrix (CRBA), the sparse LᵀL factorisation and M⁻¹ (RBDA §6.5);
* :mod:`.kinematics` — forward kinematics and frame Jacobians (with their time variation);
* :mod:`.efpa` — the Delassus matrix by EFPA (Wensing, Featherstone, Orin 2012);
* :mod:`.ltl_osim` — the Delassus matrix by LTL-OSIM (Featherstone 2010), the constraint Jacobian;
* :mod:`.pv_osim` — PV-OSIM and PV-OSIMr (Sathya et al. 2023) and their branching structure;
* :mod:`.contact` — constrained forward dynamics under link constraints in one call (ABA, bias,
  PV-OSIMr from the ABA's factors, damped Cholesky, the force response);
* :mod:`.batch` — RNEA, ABA and CRBA over many states, in parallel.

Models with loops (trees of clusters, Chignoli et al. 2024)

* :mod:`.cluster_kinematics` — cluster coordinates, G and g, the cluster motion subspace and bias;
* :mod:`.cluster_dynamics` — C-RNEA, C-ABA and the cluster mass matrix GᵀH_spanG;
* :mod:`.cluster_delassus` — C-EFPA and the constraint Jacobian in independent coordinates;
* :mod:`.cluster_pv_osimr` — PV-OSIMr over the tree of clusters;
* :mod:`.cluster_delassus_world` — both in world coordinates when every cluster has one port, and the
  two kernels, which choose between the world and the body-coordinate versions.

Kernel names: ``<algo>_core`` does the arithmetic on validated inputs, ``<algo>_kernel`` validates and
calls the core (the entry point the public layer runs); cluster versions carry the prefix ``c_``.
"""
