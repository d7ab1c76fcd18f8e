"""``borrowed``: the arrays a kernel was called with, without reference counting.

Numba counts references to every array it handles: each time an array variable is copied — passing
it to an inlined step, binding it in a loop that branches — it emits an atomic increment and a
matching decrement. LLVM's reference-count pruning removes most pairs in straight-line code but not in
kernels with branches and early returns (the cluster kernels, every validated entry point), where they
cost 50–100 ns per loop iteration: up to half of a small kernel's time.

The arrays a kernel receives are owned by its caller for the whole call, so the kernel does not need
to count them. ``borrowed`` returns the same arrays (same data, shape and strides) with a null
reference-count record, which makes every increment and decrement on them — and on views sliced from
them — a no-op. Entry points call it once on their arguments; nothing borrowed may outlive the call
(kernels return status codes and write into their arguments, never return or store an input array).
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def borrowed(typingctx, args):
    """``borrowed((a, b, ...))`` → the tuple with every array replaced by an uncounted view of it;
    other items (scalars, booleans) are returned unchanged."""
    if not isinstance(args, types.BaseTuple):
        return None

    def codegen(context, builder, signature, llargs):
        items = []
        for k, ty in enumerate(args.types):
            x = builder.extract_value(llargs[0], k)
            if isinstance(ty, types.Array):
                ary = context.make_array(ty)(context, builder, value=x)
                ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
                x = ary._getvalue()
            items.append(x)
        return context.make_tuple(builder, args, items)

    return args(args), codegen
