"""Loop-closure constraints: symbolic formulas compiled into tapes, run by one Numba interpreter or, as
native functions compiled once per machine (:mod:`loopdyn.constraints.native`), called by address."""

from .tape import (
    OPCODES,
    ConstraintProgram,
    PackedPrograms,
    compile_constraint,
    evaluate,
    evaluate_k,
    evaluate_phi,
    evaluate_phi_K,
    pack_programs,
)

__all__ = [
    "OPCODES",
    "ConstraintProgram",
    "PackedPrograms",
    "compile_constraint",
    "evaluate",
    "evaluate_k",
    "evaluate_phi",
    "evaluate_phi_K",
    "pack_programs",
]
