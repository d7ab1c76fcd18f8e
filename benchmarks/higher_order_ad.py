"""Nested forward-mode AD against loopdyn.higher_order, r = 0…5, on the aerial manipulator (issue #10,
4(d)): ``jax.jacfwd`` applied r times to an order-0 inverse dynamics written in JAX
(:func:`loopdyn.bench.higher_order.jax_inverse_dynamics`).

Two baselines per order, both the same nested ``jax.jacfwd``:

* **jit** — compiled with ``jax.jit`` (what a JAX user would reach for; XLA fuses the whole nested
  graph), and
* **eager** — the same nested function called without ``jax.jit``, op by op: the setting of the
  paper's own baseline (CasADi nested ``jtimes`` with JIT off, spec §5.2 / paper §7).

For every order it prints, as it goes (the XLA compilation of the nested graphs takes minutes at
r ≥ 4, which is why this is not part of ``loopdyn bench``):

* the trace + compile time (``jit(f).lower(t).compile()``), separately from
* the per-call times of the compiled function, of the eager one (after one warm-up call, which
  fills JAX's per-primitive caches) and of :func:`loopdyn.higher_order.rnea` on the same instant,
  medians measured interleaved in one process (:func:`loopdyn.bench.timing.interleaved`), and the
  ratios to ours;
* the largest difference of τ^(r) (jit and eager) from ours, relative to max(1, |τ^(r)|).

XLA runs on one thread (:data:`loopdyn.bench.higher_order.SINGLE_THREAD_XLA`, unless ``XLA_FLAGS`` is
already set), as loopdyn's kernel does.

Usage: ``python benchmarks/higher_order_ad.py [--max-order 5] [--no-eager] [--json out.json]``
(JAX required).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-order", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--no-eager", action="store_true", help="skip the eager (no jax.jit) baseline")
    parser.add_argument("--json", default=None, help="write the numbers to this file")
    args = parser.parse_args()

    from loopdyn.bench.higher_order import single_thread_xla

    single_thread_xla()  # before JAX is imported: XLA on one thread, as loopdyn's kernel
    import jax

    jax.config.update("jax_enable_x64", True)
    from loopdyn import higher_order as ho
    from loopdyn.bench.higher_order import jax_inverse_dynamics
    from loopdyn.bench.timing import interleaved
    from loopdyn.robots.aerial import aerial_manipulator, aerial_reference

    model = aerial_manipulator()
    data = model.create_data()
    t0 = 7.3
    q, dv = aerial_reference(t0, args.max_order)
    tau_of_t = jax_inverse_dynamics(model)
    rows = []
    print(
        "| r | compile (s) | jacfwd jit (µs) | jacfwd eager, no jit (µs) | ours ID (µs) | jit / ours | "
        "eager / ours | max rel. diff (jit, eager) |"
    )
    print("|---|---|---|---|---|---|---|---|", flush=True)
    for r in range(args.max_order + 1):
        f = tau_of_t
        for _ in range(r):
            f = jax.jacfwd(f)
        t1 = time.perf_counter()
        compiled = jax.jit(f).lower(t0).compile()
        compile_s = time.perf_counter() - t1
        dvr = np.ascontiguousarray(dv[: r + 2])
        ours = ho.rnea(model, data, q, dvr)[r]
        scale = max(1.0, np.abs(ours).max())
        ad = np.asarray(compiled(t0).block_until_ready())
        err = float(np.abs(ad - ours).max() / scale)
        fns = {
            "ad": lambda c=compiled: c(t0).block_until_ready(),
            "ours": lambda d=dvr: ho.rnea(model, data, q, d),
        }
        err_eager = None
        if not args.no_eager:
            eager = np.asarray(f(t0).block_until_ready())  # warm-up: JAX's per-primitive caches
            err_eager = float(np.abs(eager - ours).max() / scale)
            fns["eager"] = lambda f=f: f(t0).block_until_ready()
        t = interleaved(fns, repeats=args.repeats, target=5e-3)
        row = {
            "r": r,
            "compile_s": compile_s,
            "nested_jacfwd_us": t["ad"] * 1e6,
            "nested_jacfwd_eager_us": t["eager"] * 1e6 if "eager" in t else None,
            "ours_us": t["ours"] * 1e6,
            "ratio": t["ad"] / t["ours"],
            "ratio_eager": t["eager"] / t["ours"] if "eager" in t else None,
            "max_rel_diff": err,
            "max_rel_diff_eager": err_eager,
        }
        rows.append(row)
        eager_cells = (
            ("–", "–", "–")
            if err_eager is None
            else (f"{row['nested_jacfwd_eager_us']:.0f}", f"{row['ratio_eager']:.0f}×", f"{err_eager:.1e}")
        )
        print(
            f"| {r} | {compile_s:.1f} | {row['nested_jacfwd_us']:.1f} | {eager_cells[0]} | "
            f"{row['ours_us']:.2f} | {row['ratio']:.0f}× | {eager_cells[1]} | {err:.1e}, {eager_cells[2]} |",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
