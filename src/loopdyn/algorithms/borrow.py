"""Memory without reference counting: ``borrowed`` arrays, views built directly, stack buffers.

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
from numba.np.arrayobj import populate_array

from ..jit import inlined
from ..model import layout as L


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


@intrinsic
def keep_alive(typingctx, x):
    """A use of ``x`` that emits no code: placed after the last use of arrays *borrowed* from ``x``
    (:func:`loopdyn.algorithms.borrow.borrowed`, uncounted views), it keeps ``x``'s reference — and so
    the buffer — alive until then. The per-call tables of the kernels are borrowed this way, so that
    Numba's reference counting of every view passed to an inlined step costs nothing."""

    def codegen(context, builder, signature, args):
        return context.get_dummy_value()

    return types.none(x), codegen


@intrinsic
def view(typingctx, buf, offset, shape):
    """``buf[offset : offset + prod(shape)].reshape(shape)`` for a C-contiguous ``buf``, built directly
    (shape, C strides, data pointer, ``buf``'s reference-count record): Numba's ``reshape`` calls an
    out-of-line helper, ~15 ns per view, and a kernel takes a dozen views per call. The view holds a
    reference to ``buf``'s buffer, as a NumPy view (none when ``buf`` is borrowed). The caller
    guarantees that the view lies inside ``buf`` (no check)."""
    if not (isinstance(buf, types.Array) and buf.layout == "C" and isinstance(shape, types.BaseTuple)):
        return None
    ndim = len(shape)
    retty = types.Array(buf.dtype, ndim, "C")

    def codegen(context, builder, signature, args):
        bufv, off, shp = args
        src = context.make_array(buf)(context, builder, value=bufv)
        dst = context.make_array(retty)(context, builder)
        dims = [
            context.cast(builder, builder.extract_value(shp, k), shape[k], types.intp) for k in range(ndim)
        ]
        itemsize = context.get_constant(types.intp, context.get_abi_sizeof(context.get_data_type(buf.dtype)))
        strides = [itemsize] * ndim
        for k in range(ndim - 2, -1, -1):
            strides[k] = builder.mul(strides[k + 1], dims[k + 1])
        data = builder.gep(src.data, [context.cast(builder, off, offset, types.intp)])
        populate_array(dst, data=data, shape=dims, strides=strides, itemsize=itemsize, meminfo=src.meminfo)
        out = dst._getvalue()
        context.nrt.incref(builder, retty, out)  # a new reference (a no-op on a borrowed buffer)
        return out

    return retty(buf, offset, shape), codegen


@intrinsic
def flat(typingctx, x):
    """``x.reshape(-1)`` for a C-contiguous ``x``, without Numba's out-of-line reshape helper."""
    if not (isinstance(x, types.Array) and x.layout == "C"):
        return None
    retty = types.Array(x.dtype, 1, "C")

    def codegen(context, builder, signature, args):
        src = context.make_array(x)(context, builder, value=args[0])
        dst = context.make_array(retty)(context, builder)
        n = context.get_constant(types.intp, 1)
        for d in cgutils.unpack_tuple(builder, src.shape, x.ndim):
            n = builder.mul(n, d)
        itemsize = context.get_constant(types.intp, context.get_abi_sizeof(context.get_data_type(x.dtype)))
        mi = src.meminfo
        populate_array(dst, data=src.data, shape=[n], strides=[itemsize], itemsize=itemsize, meminfo=mi)
        out = dst._getvalue()
        context.nrt.incref(builder, retty, out)  # a new reference (a no-op on a borrowed array)
        return out

    return retty(x), codegen


def _busy_pointer(context, builder, ibty, ibv):
    """Pointer to ``ib[0, I0_BUSY]``: of the 2-D body table ``ib``, or of the packed ``ints`` of a
    model with loops (1-D: ib starts at ``ints[PACK_HEADER]``)."""
    ary = context.make_array(ibty)(context, builder, value=ibv)
    if ibty.ndim == 2:
        idx = [context.get_constant(types.intp, 0), context.get_constant(types.intp, L.I0_BUSY)]
    else:
        idx = [context.get_constant(types.intp, L.PACK_HEADER + L.I0_BUSY)]
    return cgutils.get_item_pointer(context, builder, ibty, ary, idx, wraparound=False)


def _is_body_table(ib) -> bool:
    return isinstance(ib, types.Array) and ib.ndim in (1, 2) and ib.dtype == types.int64


@intrinsic
def acquire(typingctx, ib):
    """Mark the Data whose body table ``ib`` is (or whose packed ``ints``, for a model with loops) as in
    use: ``ib[0, I0_BUSY]`` from 0 to 1 in one atomic compare-and-swap. True if it was free; False
    (nothing changed) while a kernel of another thread runs on the same Data — kernels release the
    GIL, and two of them writing one workspace would corrupt each other's results. Entry kernels that
    write a Data call it before they write and :func:`release` before every return that follows
    (``tests/test_threads.py`` checks the flag is down after every public call, failed or not); an
    uncontended swap costs a few ns."""
    if not _is_body_table(ib):
        return None

    def codegen(context, builder, signature, args):
        ptr = _busy_pointer(context, builder, ib, args[0])
        i64 = context.get_value_type(types.int64)
        res = builder.cmpxchg(ptr, i64(0), i64(1), "acquire", "monotonic")
        return builder.extract_value(res, 1)

    return types.boolean(ib), codegen


@intrinsic
def release(typingctx, ib):
    """``ib[0, I0_BUSY] = 0`` (an atomic store with release order: the kernel's writes to the Data are
    visible to whichever thread acquires it next). See :func:`acquire`."""
    if not _is_body_table(ib):
        return None

    def codegen(context, builder, signature, args):
        ptr = _busy_pointer(context, builder, ib, args[0])
        builder.store_atomic(context.get_value_type(types.int64)(0), ptr, "release", 8)
        return context.get_dummy_value()

    return types.none(ib), codegen


STACK_FLOATS = 6144  # 48 KiB: the tables of the aerial manipulator up to r = 6 (ID) / r = 5 (FD)
STACK_INTS = 1024  # 8 KiB


def _stack_array(dtype, size: int):
    """The codegen of a 1-D ``dtype`` buffer of ``size`` items in the calling function's stack frame."""
    retty = types.Array(dtype, 1, "C")

    def codegen(context, builder, signature, args):
        intp = types.intp
        n = context.get_constant(intp, size)
        data = cgutils.alloca_once(builder, context.get_data_type(dtype), size=n)
        dst = context.make_array(retty)(context, builder)
        itemsize = context.get_constant(intp, context.get_abi_sizeof(context.get_data_type(dtype)))
        meminfo = cgutils.get_null_value(dst.meminfo.type)
        populate_array(dst, data=data, shape=[n], strides=[itemsize], itemsize=itemsize, meminfo=meminfo)
        return dst._getvalue()

    return retty(), codegen


@intrinsic
def stack_floats(typingctx):
    """A buffer of ``STACK_FLOATS`` float64 in the stack frame of the calling compiled function
    (reserved at its entry, uncounted, uninitialised, valid until it returns): per-call scratch of
    small models without a heap allocation (~50–80 ns each)."""
    return _stack_array(types.float64, STACK_FLOATS)


@intrinsic
def stack_ints(typingctx):
    """:func:`stack_floats` for ``STACK_INTS`` int64."""
    return _stack_array(types.int64, STACK_INTS)


@inlined
def model_views(ints, floats):
    """``(ib, ws, ic, cb, wc)``: the model arrays of a model with loops, as views of its two packed
    buffers (layout ``PACK_*``; the views share the buffers' reference-count record, none when they
    are borrowed)."""
    nib, nic = ints[L.PACK_IB_ROWS], ints[L.PACK_IC_ROWS]
    o = L.PACK_HEADER
    ib = view(ints, o, (nib, L.NI))
    o += nib * L.NI
    ic = view(ints, o, (nic, L.NC))
    o += nic * L.NC
    cb = view(ints, o, (ints[L.PACK_CB],))
    ws = view(floats, 0, (nib, L.NW))
    wc = view(floats, nib * L.NW, (ints[L.PACK_WC],))
    return ib, ws, ic, cb, wc


@intrinsic
def address_of(typingctx, x):
    """The address of ``x``'s first element (``x.ctypes.data``), as an int64. C-contiguous arrays
    only (a compile-time error otherwise): the address alone then describes the array."""
    if not (isinstance(x, types.Array) and x.layout == "C"):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(x)(context, builder, value=args[0])
        return builder.ptrtoint(ary.data, context.get_value_type(types.int64))

    return types.int64(x), codegen


def _array_at(dtype):
    @intrinsic
    def array_at(typingctx, address, shape):
        if not (isinstance(address, types.Integer) and isinstance(shape, types.BaseTuple)):
            return None
        ndim = len(shape)
        retty = types.Array(dtype, ndim, "C")

        def codegen(context, builder, signature, args):
            address_v, shape_v = args
            dst = context.make_array(retty)(context, builder)
            dims = [
                context.cast(builder, builder.extract_value(shape_v, k), shape[k], types.intp)
                for k in range(ndim)
            ]
            itemsize = context.get_constant(types.intp, context.get_abi_sizeof(context.get_data_type(dtype)))
            strides = [itemsize] * ndim
            for k in range(ndim - 2, -1, -1):
                strides[k] = builder.mul(strides[k + 1], dims[k + 1])
            data = builder.inttoptr(address_v, context.get_value_type(dtype).as_pointer())
            meminfo = cgutils.get_null_value(dst.meminfo.type)
            populate_array(dst, data=data, shape=dims, strides=strides, itemsize=itemsize, meminfo=meminfo)
            return dst._getvalue()

        return retty(address, shape), codegen

    return array_at


floats_at = _array_at(types.float64)
floats_at.__doc__ = """``floats_at(address, shape)``: the C-contiguous float64 array of ``shape`` at
``address`` (as :func:`address_of` gives it), uncounted (a borrowed view: its owner must outlive it)."""
ints_at = _array_at(types.int64)
ints_at.__doc__ = """``ints_at(address, shape)``: as :func:`floats_at`, for int64 arrays."""
