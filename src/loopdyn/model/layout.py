"""Column layout of the compiled model: the flat arrays the Numba kernels read.

A compiled tree model lives in two 2-D arrays with one row per body (row 0 = the universe):

* ``ib`` (int64, ``(nbodies + 1, NI)``): topology and coordinate indices;
* ``ws`` (float64, ``(nbodies + 1, NW)``): the body's constant parameters (joint placement, inertia,
  axis) followed by the per-body workspace the algorithms fill (transforms, velocities, articulated
  inertias, ...).

Each :class:`~loopdyn.model.data.Data` owns its own copy of both, so a kernel call needs just two
model arguments besides the user's vectors. Rotations are stored row-major (9 numbers); spatial
vectors use Featherstone's order ``[angular; linear]``.
"""

# ---- ib columns -------------------------------------------------------------------------------
I_PARENT = 0  # parent body index (0 = universe)
I_JTYPE = 1  # joint type code (loopdyn.model.joints)
I_IQ = 2  # first index in q
I_IV = 3  # first index in v
I_NQ = 4  # number of configuration coordinates
I_NV = 5  # number of velocity coordinates
I_CLUSTER = 6  # cluster of the body (row index in the cluster table, from 1)
I_OUT = 7  # output body Λ(i): nearest supporting body outside the body's cluster (0 = universe)
I_CPAR = 8  # parent body if it is in the same cluster, else 0
I_SUB = 9  # index of the body inside its cluster
NI = 12
# row 0 of ib: model sizes
I0_NBODIES = 0
I0_NQ = 1
I0_NV = 2

# ---- ws columns: constant model parameters ----------------------------------------------------
W_JR = 0  # joint placement rotation (active: joint axes in parent-body axes), 9
W_JP = 9  # joint placement translation (joint origin in parent-body frame), 3
W_INER = 12  # inertia about the body origin: m, h = m c (3), Ī_o (xx, yy, zz, xy, xz, yz), 10
W_AXIS = 22  # unit joint axis (revolute / prismatic), 3
# row 0 (universe) parameters
W0_GRAVITY = 0  # gravity vector in the world frame, 3

W_ARM = 25  # armature of the joint's velocity coordinates, 6 (row 0: 1.0 if the model has any)

# ---- ws columns: workspace written by the algorithms --------------------------------------------
# ordered by use: the tree kernels touch the first ~210 columns of a row; the scratch comes last
W_R = 31  # rotation of the body frame in its parent body frame (parent_M_body), 9
W_P = 40  # translation of parent_M_body, 3
W_OR = 43  # rotation of the body frame in the world, 9
W_OP = 52  # body origin in the world, 3
W_V = 55  # spatial velocity of the body, body frame, 6
W_A = 61  # spatial acceleration of the body, body frame, 6
W_F = 67  # spatial force transmitted by the body's joint, body frame, 6
W_C = 73  # velocity-product acceleration v × vJ, 6
W_IA = 79  # articulated-body inertia, 6x6 row-major, 36
W_PA = 115  # articulated bias force, 6
W_U = 121  # U = IA S, column k at W_U + 6 k, 36
W_DINV = 157  # D^-1 (nv x nv, row-major), 36
W_UU = 193  # u = tau - S^T pA, 6
W_IC = 199  # composite rigid-body inertia (compact, 10)
# cluster kinematics (bodies of multi-body clusters), all in the frame of the output body Λ(i)
W_XR = 209  # rotation of the body frame in Λ(i)'s frame, 9
W_XP = 218  # origin of the body in Λ(i)'s frame, 3
W_ST = 221  # the joint's motion subspace column expressed in Λ(i)'s frame, 6
W_WR = 227  # velocity of the body relative to Λ(i), 6
W_DW = 233  # its time derivative (seen from Λ(i)) with the given accelerations, 6
W_DW0 = 239  # the same with zero independent accelerations (the bias), 6
W_TMP = 245  # scratch: row 0 holds the kernels' global scratch, 168
NW = 413

# ---- cluster table ic (int64, (nclusters + 1, NC)); row 0 = header -------------------------------
C_FIRST = 0  # offset of the cluster's bodies in cb
C_NB = 1  # number of bodies
C_KIND = 2  # 0 = single body with its tree joint, 1 = explicit constraints, 2 = implicit
C_N = 3  # spanning coordinates
C_M = 4  # independent coordinates
C_IQ = 5  # offset in q (cluster state)
C_NQ = 6
C_IV = 7  # offset in v
C_NV = 8
C_PROG = 9  # constraint program (tape) index, −1 if none
C_NROW = 10  # independent constraint rows (= N − M)
C_IND = 11  # offset in cb of the local indices of the independent coordinates (M)
C_DEP = 12  # offset in cb of the local indices of the dependent coordinates (NROW)
C_G = 13  # offset in wc of G (N × M, row-major)
C_GB = 14  # offset in wc of g (N)
C_S = 15  # offset in wc of the cluster motion subspace S (6 NB × M, row-major)
C_SCR = 16  # offset in wc of the cluster's scratch: q, q̇ (N each), φ, K, k, LU (see clusters.py)
C_PARENT = 17  # parent cluster (0 = world)
C_ROWS = 18  # offset in cb of the tape rows kept (NROW)
C_IA = 19  # offset in wc of the articulated inertia 𝖨^A (6 NB × 6 NB, row-major)
C_PA = 20  # offset in wc of the articulated bias force 𝗉^A (6 NB)
C_U = 21  # offset in wc of 𝖴 = 𝖨^A 𝖲 (6 NB × M, row-major)
C_DINV = 22  # offset in wc of 𝖣⁻¹ (M × M)
C_UU = 23  # offset in wc of 𝗎 = τ − 𝖲ᵀ𝗉^A (M)
C_DSCR = 24  # offset in wc of scratch for 𝖣 and its factorisation (M² + 72)
C_MASK = 25  # offset in wc of the nonzero-block mask of 𝖨^A (NB × NB, 0/1) and group scratch
C_ARM = 26  # offset in wc of the armature of the cluster's spanning coordinates (N)
NC = 28
# header row 0
C0_NCL = 0  # number of clusters
C0_QS = 1  # offset in wc of the spanning-tree configuration
C0_QDS = 2  # ... velocity
C0_QDDS = 3  # ... acceleration
C0_REGS = 4  # offset in wc of the tape registers
C0_NQS = 5  # spanning nq
C0_NVS = 6  # spanning nv
C0_HS = 7  # offset in wc of the spanning-tree mass matrix (nvs × nvs)
C0_TAUS = 8  # offset in wc of spanning joint forces (nvs)
C0_PHITOL = 9  # offset in wc of the largest |φ| accepted for implicit clusters' positions
