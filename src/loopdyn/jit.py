"""How loopdyn's compiled code is built and cached: ``njit`` (Numba's, with loopdyn's cache), and the
decorators of the small steps every kernel is made of.

Steps
    Every algorithm is written as named steps (a joint calculation, a spatial transform, one pass of
    a recursion) that the kernels call. A step must cost nothing at run time — it runs per body, per
    cluster, per constraint row — and little at compile time, since dozens of kernels share it.

    ``@inlined`` compiles a step once per process as a function of its own (cached on disk like every
    kernel) and marks it ``alwaysinline`` for LLVM (Numba's ``forceinline``): each kernel links the
    compiled step and LLVM inlines it there, so the machine code is that of the step written out in
    the kernel. A step is compiled to LLVM IR only (:class:`StepLibrary`): the kernel that inlines
    it optimises it and makes its machine code, once. Numba's own inlining (``inline="always"``)
    gives the same code, but it copies the step's intermediate representation into every caller and
    types and lowers it again at every call site, recursively through the steps it calls: measured
    with an empty cache on Mini Cheetah's spanning tree, the first CRBA call took 88 s that way and
    7 s this way, with the same time per call. Steps have no Python entry point
    (``no_cpython_wrapper``: half of a small function's compile time); they are called from compiled
    code only.

    ``@sequence`` is for the thin functions that only call others in order (validate, then run the
    core): Numba copies them into their caller, which is cheap since what they call stays a call. As
    libraries of their own they would make LLVM optimise everything below them once more.

Shared passes
    A plain ``njit`` function called from compiled code is linked into its caller: its LLVM IR is
    copied into the caller's module, optimised again there and turned into machine code again, in
    every kernel that calls it (besides once as a function of its own). For the large passes that
    several kernels share — the cluster kinematics, C-ABA's backward and forward passes, a Delassus
    or contact core — that repeated work was most of what the kernels cost to compile: the contact
    kernel with loops, the world-frame Delassus kernels and C-ABA each held the cluster kinematics
    and C-ABA's backward pass. ``@shared`` compiles such a pass once to machine code of its own and
    its callers call it through a symbol of loopdyn's (named after the pass and its argument types,
    the same in every process), declared in their modules, never defined there; the symbol is given
    the pass's address in this process when the pass is compiled or loaded from the cache. A
    caller's cache entry lists the passes it calls, and loading it loads them first. A call through
    the symbol costs a few nanoseconds, once per pass per kernel call.

Helpers
    A plain ``njit`` helper (no signature) called from compiled code is compiled, as a step, to LLVM
    IR only: its callers link it, optimise it and make its machine code, and LLVM chooses whether to
    inline it there. Numba would also optimise it as a module of its own and emit its machine code,
    with a Python entry point, for nobody (1.6 of the 15 s of the first C-ABA call on Mini Cheetah).
    A helper called from Python (the constraint programs' ``evaluate`` while a model is built) runs
    a twin compiled with a Python entry point on that first call.

Lazy passes
    ``@lazy`` is for code that only some models run: the implicit loops' constraint programs,
    K_d solves and closure checks (``cluster_kinematics.implicit_coordinates_pass``), their Taylor
    sweeps for the derivatives (``loop_derivatives.loop_tangent_terms``, ``loop_corrections``),
    Ġ for the Coriolis matrix (``coriolis.implicit_gdot_pass``), and C-ABA's backward steps for
    one-port clusters of several bodies and its generic step to the parent cluster
    (``cluster_dynamics.c_aba_one_port_pass``, ``c_aba_one_port2_pass``, ``c_aba_to_parent_pass``).
    Its callers hold no copy of it and no reference that must be resolved when they are compiled:
    they load its address from a process-wide slot and call it (a missing pass returns a status).
    :class:`loopdyn.Data` compiles or loads the passes its model's kernels run (the loops'
    coordinates, the C-ABA steps of its clusters); the derivatives' loop terms and Ġ wait for the
    first call that needs them, which meets the missing pass's status, loads it and runs again
    (``algorithms.call.missing_code_loaded``). A tree or a model with explicit clusters only (Mini
    Cheetah's rotors) never compiles them: its first C-ABA call went from 15.8 to 10.5 CPU-s with the
    three changes of this section and the next, and to 8.5 CPU-s when C-ABA's steps that its stars
    and root body do not take became lazy passes too.

Machine code
    loopdyn's libraries (:class:`LoopdynLibrary`) run Numba's per-function passes with one pass
    manager per module instead of one per function, and emit machine code without LLVM's loop
    strength reduction, which took half of the emission time for no measurable gain per call.

One compilation per argument types
    Numba types a constant argument (``check_vector(q, nq, 0)``, ``c_fk_core(..., False)``,
    ``ops.col6w(w, o, 2)``) as a literal and compiles the callee once per constant: a helper called
    with the flags 0, 1 and 2 was compiled three times, a cluster core called with ``True`` by one
    kernel and ``False`` by another twice. The steps and the plain ``njit`` helpers
    (:class:`HelperDispatcher`) are compiled for the non-literal types instead (``int64``, ``bool``):
    one compilation serves every constant. An inlined step loses nothing (LLVM propagates the
    caller's constant after inlining it); a helper called through a real call tests its flag at run
    time, a branch that costs nothing next to the call. A kernel that needs a specialised helper
    says so with two functions.

The cache
    Numba keys a function's cache entry on the modification time of the function's own file, so a
    kernel whose steps live in another file would load stale machine code after that file changed.
    loopdyn's cache entries are keyed instead on a digest of every source file of the package (and,
    as Numba's, on Numba's version and the processor): any edit recompiles what is used next. An
    unreadable or corrupted cache entry is compiled again with a :class:`CacheWarning`, never a
    crash; a failed write (a full disk, a read-only folder) only warns. Several processes may compile
    the same function at once: files are written under temporary names and moved into place, and an
    entry lost to a race is compiled again by the next process that needs it. Where the package's
    folder is read-only, Numba keeps the cache in the user's cache folder (``~/.cache/numba``);
    ``NUMBA_CACHE_DIR`` chooses another.
"""

from __future__ import annotations

import copy
import ctypes
import functools
import hashlib
import os
import sys
import types as types_module
import warnings
from pathlib import Path

import numba
from llvmlite import binding as llvm
from llvmlite import ir
from numba.core import imputils, typeinfer, types
from numba.core.base import OverloadSelector
from numba.core.caching import CompileResultCacheImpl, FunctionCache
from numba.core.codegen import JITCodeLibrary, JITCPUCodegen
from numba.core.compiler import Compiler
from numba.core.registry import CPUDispatcher

__all__ = [
    "CacheWarning",
    "HelperDispatcher",
    "PackageCache",
    "StepCache",
    "SharedDispatcher",
    "StepDispatcher",
    "StepLibrary",
    "LazyPass",
    "ensure_lazy",
    "lazy_passes",
    "lazy_group",
    "lazy_group_number",
    "inlined",
    "lazy",
    "njit",
    "sequence",
    "shared",
    "source_digest",
]


class CacheWarning(UserWarning):
    """A compiled-code cache entry could not be read or written; the code was compiled instead."""


@functools.cache
def source_digest() -> str:
    """SHA-256 of the contents of every ``.py`` file of the loopdyn package (read once per process)."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


# --- passes called by address ------------------------------------------------------------------

_SHARED: dict[str, int] = {}  # symbol -> address of the pass's machine code in this process


def _shared_symbol(py_func, args) -> str:
    """The process-independent name under which a pass compiled for ``args`` is called: its module,
    name and argument types (Numba's own symbol names carry a per-process counter)."""
    key = f"{py_func.__module__}.{py_func.__qualname__}({', '.join(map(str, args))})"
    tag = hashlib.sha256(key.encode()).hexdigest()[:20]
    return f"loopdyn_shared_{py_func.__qualname__.replace('.', '_')}_{tag}"


def _call_by_address(fndesc, symbol: str, dependency: tuple):
    """Numba's lowering of a call to a compiled function (``imputils.user_function``: its call
    sequence, status propagation and the declaration's target attributes) on a copy of the callee's
    descriptor renamed to ``symbol`` and with no library to link: the caller's module holds a call, not
    a copy of the callee, and the symbol is resolved when the caller's machine code is loaded (see
    :func:`shared`). The caller's code library records the dependency for its cache entry."""
    renamed = copy.copy(fndesc)
    renamed.mangled_name = symbol
    call = imputils.user_function(renamed, ())

    def imp(context, builder, sig, args):
        library = context.active_code_library
        deps = getattr(library, "_loopdyn_shared", None)
        if deps is None:
            deps = library._loopdyn_shared = {}
        deps[symbol] = dependency
        return call(context, builder, sig, args)

    imp.signature = call.signature
    imp.libs = ()
    return imp


def _shared_dependencies(library) -> dict:
    """Every pass called by address from ``library``'s machine code: its own calls and those of the
    libraries linked into it (steps and helpers whose code it contains), transitively."""
    out, seen, stack = {}, set(), [library]
    while stack:
        lib = stack.pop()
        if id(lib) in seen:
            continue
        seen.add(id(lib))
        out.update(getattr(lib, "_loopdyn_shared", None) or {})
        stack.extend(getattr(lib, "_linking_libraries", ()))
    return out


def _load_shared(dependencies: dict) -> None:
    """Compile or load (from the cache) every pass in ``dependencies`` that this process has not, so
    that the symbols a cached caller calls are defined before its machine code is loaded."""
    import importlib

    for symbol, (module, qualname, args) in dependencies.items():
        if symbol in _SHARED:
            continue
        target = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        if not isinstance(target, SharedDispatcher):
            raise RuntimeError(f"{module}.{qualname} is not a loopdyn.jit.shared pass")
        target.compile(tuple(args))
        if symbol not in _SHARED:
            raise RuntimeError(f"{module}.{qualname}{tuple(args)} did not define {symbol}")


class _SharedCacheImpl(CompileResultCacheImpl):
    """A cache entry that lists the passes its machine code calls by address, loaded before it."""

    def reduce(self, cres):
        return (_shared_dependencies(cres.library), super().reduce(cres))

    def rebuild(self, target_context, payload):
        dependencies, inner = payload
        _load_shared(dependencies)
        cres = self._rebuild(target_context, inner)
        cres.library._loopdyn_shared = dict(dependencies)
        return cres

    def _rebuild(self, target_context, payload):
        return super().rebuild(target_context, payload)


class PackageCache(FunctionCache):
    """Numba's per-function cache, keyed on the whole package's sources, that recompiles instead of
    failing on a bad entry (see the module's docstring)."""

    _impl_class = _SharedCacheImpl

    def __init__(self, py_func):
        super().__init__(py_func)
        self._cache_file._source_stamp = ("loopdyn", source_digest())

    def load_overload(self, sig, target_context):
        try:
            return super().load_overload(sig, target_context)
        except Exception as exc:  # a truncated or corrupted file: compile instead
            warnings.warn(
                f"loopdyn: the cached machine code of {self._py_func.__qualname__} could not be read "
                f"({type(exc).__name__}: {exc}); compiling it again (cache folder {self.cache_path})",
                CacheWarning,
                stacklevel=2,
            )
            self._discard_index()
            return None

    def save_overload(self, sig, data):
        for attempt in range(2):
            try:
                return super().save_overload(sig, data)
            except Exception as exc:
                if attempt == 0 and not isinstance(exc, OSError):
                    self._discard_index()  # an unreadable index: start it again
                    continue
                warnings.warn(
                    f"loopdyn: could not cache the machine code of {self._py_func.__qualname__} "
                    f"({type(exc).__name__}: {exc}); it is compiled again in the next process",
                    CacheWarning,
                    stacklevel=2,
                )
                return None

    def _discard_index(self) -> None:
        try:
            os.unlink(self._cache_file._index_path)
        except OSError:
            pass


class _OneTypingPerType:
    """Dispatcher mixin: calls from compiled code are compiled for the non-literal types of their
    arguments (see "One compilation per argument types" in the module's docstring)."""

    def get_call_template(self, args, kws):
        args = tuple(types.unliteral(a) for a in args)
        kws = {k: types.unliteral(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)


class HelperDispatcher(_OneTypingPerType, CPUDispatcher):
    """The dispatcher of a plain ``njit`` helper (no signature given): compiled once per non-literal
    argument types when called from compiled code, to LLVM IR only (:class:`StepLibrary`: the callers
    that link it optimise it and make its machine code, as for a step, but LLVM chooses whether to
    inline it). A call from Python goes to a twin compiled with a Python entry point."""

    _twin = None

    def __call__(self, *args, **kwargs):
        twin = self._twin
        if twin is None:
            twin = self._twin = _python_twin(self)
        return twin(*args, **kwargs)


def _python_twin(helper):
    """An ordinary Numba dispatcher (with a Python entry point, cached) of a helper's function, under
    a name of its own so that its cache entries are not the helper's."""
    func = helper.py_func
    clone = types_module.FunctionType(
        func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__
    )
    clone.__qualname__ = f"{func.__qualname__}.python_entry"
    clone.__module__ = func.__module__
    clone.__doc__ = func.__doc__
    options = dict(helper.targetoptions)
    options.pop("no_cpython_wrapper", None)
    options.pop("nopython", None)
    twin = numba.njit(pipeline_class=LoopdynCompiler, **options)(clone)
    if isinstance(helper._cache, PackageCache):
        _with_package_cache(twin)
    return twin


def _with_package_cache(dispatcher) -> None:
    dispatcher._cache = PackageCache(dispatcher.py_func)


def njit(signature_or_function=None, **options):
    """Numba's ``njit`` with loopdyn's cache (:class:`PackageCache`) when ``cache=True``: use as
    ``@njit(cache=True, ...)`` or ``@njit("sig", cache=True, ...)`` (compiled for that signature only,
    as Numba's)."""
    cache = options.pop("cache", False)

    def decorate(func, signatures):
        if signatures:
            dispatcher = numba.njit(pipeline_class=LoopdynCompiler, **options)(func)
        else:  # a helper: LLVM IR for its compiled callers (a twin serves Python callers)
            dispatcher = numba.njit(pipeline_class=StepCompiler, no_cpython_wrapper=True, **options)(func)
            dispatcher.__class__ = HelperDispatcher
        if cache:
            if signatures:
                _with_package_cache(dispatcher)
            else:
                dispatcher._cache = StepCache(dispatcher.py_func)
        if signatures:
            with typeinfer.register_dispatcher(dispatcher):
                for sig in signatures:
                    dispatcher.compile(sig)
            dispatcher.disable_compile()
        return dispatcher

    if callable(signature_or_function) and not isinstance(signature_or_function, str):
        return decorate(signature_or_function, None)
    sigs = signature_or_function
    if sigs is not None and not isinstance(sigs, (list, tuple)):
        sigs = [sigs]
    return lambda func: decorate(func, sigs)


class StepDispatcher(_OneTypingPerType, CPUDispatcher):
    """The dispatcher of an ``@inlined`` step: compiled without a Python entry point, so calling it
    from Python raises ``TypeError`` (Numba would jump to a missing wrapper and crash)."""

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"{self.py_func.__module__}.{self.py_func.__qualname__} is a compiled step "
            "(loopdyn.jit.inlined): it can be called from compiled code only"
        )


class _NoLoopStrengthReduction:
    """Context: LLVM's loop strength reduction off while loopdyn's machine code is emitted (the option
    is process-wide; it is set back on leaving, under Numba's compiler lock, so other code compiled in
    the process keeps LLVM's default). On the first C-ABA call (Mini Cheetah, empty cache) that pass
    took 1.15 of the 2.3 s of machine-code emission, half of it on one function, for no measurable
    change in time per call (interleaved processes: 3.71 against 3.82 µs)."""

    depth = 0

    def __enter__(self):
        if _NoLoopStrengthReduction.depth == 0:
            llvm.set_option("", "--disable-lsr=true")
        _NoLoopStrengthReduction.depth += 1

    def __exit__(self, *exc):
        _NoLoopStrengthReduction.depth -= 1
        if _NoLoopStrengthReduction.depth == 0:
            llvm.set_option("", "--disable-lsr=false")


class LoopdynLibrary(JITCodeLibrary):
    """The code library of loopdyn's compiled functions: Numba's, with two changes to what compiling
    costs, none to the code. Numba's per-function passes build a new pass manager for every function
    of a module, declarations included; here one serves the module and declarations are skipped. The
    machine code is emitted without loop strength reduction (:class:`_NoLoopStrengthReduction`)."""

    def _optimize_functions(self, ll_module):
        ll_module.data_layout = self._codegen._data_layout
        fpm, pb = self._codegen._function_pass_manager()
        for func in ll_module.functions:
            if func.is_declaration:
                continue
            with self._recorded_timings.record(f"Function passes on {func.name!r}", pb):
                fpm.run(func, pb)

    def _finalize_specific(self):
        with _NoLoopStrengthReduction():
            super()._finalize_specific()


class LoopdynCompiler(Compiler):
    """Numba's compiler with a :class:`LoopdynLibrary` (or, for steps, a :class:`StepLibrary`) for the
    function it compiles."""

    library_class = LoopdynLibrary
    object_code = True

    def compile_extra(self, func):
        library = self.state.targetctx.codegen().create_library(func.__qualname__)
        library.__class__ = self.library_class
        if self.object_code:
            library.enable_object_caching()
        self.state.library = library
        return super().compile_extra(func)


class StepLibrary(LoopdynLibrary):
    """The code library of a step: LLVM IR for the kernels to link, never optimised as a module of its
    own nor turned into machine code.

    A step is never called through a pointer: every caller links its IR and LLVM inlines it. Numba
    would nevertheless optimise each step's module (the step and every step below it, linked in) and
    emit its machine code, once per step and again in every step above it; the kernel then
    optimises the whole once more. Measured on the first C-ABA call (Mini Cheetah, empty cache),
    that repeated work was 8 of the 18 s spent in LLVM, for machine code nobody ran. Here the step
    keeps only Numba's per-function passes (which shrink the IR the callers link); the kernel's
    optimisation of the whole is the only one. Cached as that IR (bitcode), not as machine code."""

    def _optimize_final_module(self):
        pass  # the kernels that link this step optimise it, inlined

    def _finalize_final_module(self):
        self._finalize_dynamic_globals()
        self._verify_declare_only_symbols()
        self._finalized = True  # no machine code: the module is not added to the execution engine

    def get_pointer_to_function(self, name):
        self._ensure_finalized()
        return 0  # nothing is callable: steps have no entry point of their own

    def serialize_using_object_code(self):
        self._ensure_finalized()
        return (self.name, "bitcode", self._final_module.as_bitcode())


class _StepCacheImpl(_SharedCacheImpl):
    def _rebuild(self, target_context, payload):
        codegen = target_context.codegen()
        codegen._library_class = StepLibrary  # the cached bitcode becomes a StepLibrary again
        try:
            return super()._rebuild(target_context, payload)
        finally:
            del codegen._library_class  # (under Numba's compiler lock, as every cache load)


class StepCache(PackageCache):
    """:class:`PackageCache` for steps: entries are the step's IR (:class:`StepLibrary`)."""

    _impl_class = _StepCacheImpl


class StepCompiler(LoopdynCompiler):
    """Numba's compiler with a :class:`StepLibrary` for the compiled step."""

    library_class = StepLibrary
    object_code = False


def _set_env_if_loaded(self, env_name, env, _set_env=JITCPUCodegen.set_env):
    # Numba stores each compiled function's environment pointer in the function's global once its
    # module is in the execution engine; a step's module never is (StepLibrary), and the global then
    # has no address: there is nothing to set (the kernels that inline the step hold their own)
    if self._engine.get_global_value_address(env_name) != 0:
        _set_env(self, env_name, env)


JITCPUCodegen.set_env = _set_env_if_loaded


def _step(func):
    dispatcher = numba.njit(
        forceinline=True, no_cpython_wrapper=True, fastmath={"contract"}, pipeline_class=StepCompiler
    )(func)
    dispatcher._cache = StepCache(dispatcher.py_func)
    return dispatcher


def inlined(func):
    """Decorator: a step compiled once, without a Python entry point, and inlined by LLVM into every
    compiled caller. Its products and sums may fuse into multiply-adds (``fastmath={"contract"}``:
    each a·b + c rounded once instead of twice; nothing else is relaxed), as in the kernels that were
    compiled that way when the steps were copied into them (the CRBAs, RNEA, ABA, the world-frame
    Delassus cores): LLVM keeps the flags of the code it inlines, and without them the CRBA ran
    8–11 % slower. Called from Python, a step raises ``TypeError``."""
    dispatcher = _step(func)
    dispatcher.__class__ = StepDispatcher
    return dispatcher


class SharedDispatcher(_OneTypingPerType, CPUDispatcher):
    """The dispatcher of a :func:`shared` pass: compiled once per process (or loaded from the cache)
    to machine code of its own, and called by address from compiled callers."""

    def add_overload(self, cres):
        super().add_overload(cres)
        args = tuple(cres.signature.args)
        symbol = _shared_symbol(self.py_func, args)
        if symbol not in _SHARED:
            address = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
            if not address:
                raise RuntimeError(f"no machine code for {self.py_func.__qualname__}{args}")
            llvm.add_symbol(symbol, address)
            _SHARED[symbol] = address
        dependency = (self.py_func.__module__, self.py_func.__qualname__, args)
        impl = _call_by_address(cres.fndesc, symbol, dependency)
        selector = OverloadSelector()
        selector.append(impl, impl.signature)
        self.targetctx._defns[cres.entry_point] = selector  # replaces Numba's linking call

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"{self.py_func.__module__}.{self.py_func.__qualname__} is a compiled pass "
            "(loopdyn.jit.shared): it can be called from compiled code only"
        )


def shared(func=None, **options):
    """Decorator: a pass compiled once to machine code of its own and called by address (not
    linked, not inlined) from every compiled caller. Use it for the large passes that several
    kernels share (a recursion's whole backward pass, a Delassus core): linked, each would be
    optimised again and turned into machine code again inside every kernel that calls it. A call
    costs a few nanoseconds, nothing next to a pass over the bodies. Cached on disk; a caller's cache
    entry names the passes it calls, and loading it loads them first. Options as Numba's ``njit``
    (``fastmath``...). Called from Python, a pass raises ``TypeError``."""

    def decorate(f):
        dispatcher = numba.njit(no_cpython_wrapper=True, pipeline_class=LoopdynCompiler, **options)(f)
        dispatcher.__class__ = SharedDispatcher
        _with_package_cache(dispatcher)
        return dispatcher

    return decorate(func) if func is not None else decorate


class LazyPass:
    """A pass compiled only when :meth:`ensure` is called, and called from compiled code through a
    process-wide slot that holds its address (see :func:`lazy`)."""

    lazy = True  # loopdyn.algorithms.common.compiled: compile with ensure()

    def __init__(self, func, signature: str, missing_status: int, needed_by: str, options: dict):
        from numba.core import sigutils

        functools.update_wrapper(self, func)
        self.py_func = func
        self.module = sys.modules[func.__module__]
        self.signature = signature
        self.parallel = False
        if needed_by not in _GROUPS:
            _GROUPS.append(needed_by)
        self.missing_status = missing_status + lazy_group_number(needed_by)  # which group is missing
        self.options = dict(options)
        args, ret = sigutils.normalize_signature(signature)
        self.arg_types, self.return_type = tuple(args), ret
        if ret != types.int64:
            raise TypeError(f"{func.__qualname__}: a lazy pass returns an int64 status, not {ret}")
        self._slot = ctypes.c_int64(0)
        self.symbol = f"loopdyn_lazy_{func.__module__}_{func.__qualname__}".replace(".", "_")
        llvm.add_symbol(self.symbol, ctypes.addressof(self._slot))
        self._dispatcher = None
        self.call = _lazy_call(self)
        _LAZY.setdefault(needed_by, []).append(self)
        _LOADED.discard(needed_by)  # a group loaded before this pass was defined is not any more

    @property
    def ready(self) -> bool:
        """Whether this process has the pass's machine code (its slot holds the address)."""
        return self._slot.value != 0

    def ensure(self):
        """Compile the pass (or load it from the cache) once per process and publish its address;
        returns its dispatcher. Called for every new Data of a model that needs it: once compiled,
        it returns without taking Numba's compiler lock."""
        if self._dispatcher is not None:
            return self._dispatcher
        with numba.core.compiler_lock.global_compiler_lock:
            if self._dispatcher is None:
                d = numba.njit(
                    no_cpython_wrapper=True, nogil=True, pipeline_class=LoopdynCompiler, **self.options
                )(self.py_func)
                _with_package_cache(d)
                with typeinfer.register_dispatcher(d):
                    d.compile(self.signature)
                d.disable_compile()
                cres = next(iter(d.overloads.values()))
                address = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
                if not address:
                    raise RuntimeError(f"no machine code for {self.py_func.__qualname__}")
                self._dispatcher = d
                self._slot.value = address
        return self._dispatcher

    def __call__(self, *args, **kwargs):
        raise TypeError(
            f"{self.py_func.__module__}.{self.py_func.__qualname__} is a lazy pass "
            "(loopdyn.jit.lazy): compiled code calls it through its .call"
        )


def _lazy_call(lazy_pass: LazyPass):
    """The intrinsic through which compiled code calls ``lazy_pass``: it loads the pass's address from
    its slot and calls it with Numba's calling convention (arrays of layout C are passed where the
    signature says any layout), or returns the pass's ``missing_status`` while the slot is empty."""
    from numba.core import cgutils
    from numba.extending import intrinsic

    want = lazy_pass.arg_types

    def compatible(given, wanted):
        if isinstance(wanted, types.Array):
            return (
                isinstance(given, types.Array)
                and given.dtype == wanted.dtype
                and given.ndim == wanted.ndim
                and (given.layout == wanted.layout or wanted.layout == "A")
                and (given.mutable or not wanted.mutable)
            )
        return isinstance(given, types.Integer) and isinstance(wanted, types.Integer)

    @intrinsic
    def call(typingctx, *args):
        if len(args) != len(want) or not all(compatible(g, w) for g, w in zip(args, want, strict=True)):
            return None

        def codegen(context, builder, signature, llargs):
            given = signature.args[0].types  # the arguments arrive as one tuple (*args)
            values = cgutils.unpack_tuple(builder, llargs[0], len(given))
            cast = [context.cast(builder, v, g, w) for v, g, w in zip(values, given, want, strict=True)]
            module = builder.module
            slot = module.globals.get(lazy_pass.symbol)
            if slot is None:
                slot = ir.GlobalVariable(module, ir.IntType(64), name=lazy_pass.symbol)
            address = builder.load(slot)
            missing = context.get_constant(types.int64, lazy_pass.missing_status)
            result = cgutils.alloca_once_value(builder, missing)
            with builder.if_then(builder.icmp_unsigned("!=", address, address.type(0)), likely=True):
                fnty = context.call_conv.get_function_type(types.int64, want)
                fn = builder.inttoptr(address, fnty.as_pointer())
                status, value = context.call_conv.call_function(builder, fn, types.int64, want, cast)
                with cgutils.if_unlikely(builder, status.is_error):
                    context.call_conv.return_status_propagate(builder, status)
                builder.store(value, result)
            return builder.load(result)

        return types.int64(types.StarArgTuple.from_types(args)), codegen

    return call


_LAZY: dict[str, list[LazyPass]] = {}  # what needs them -> the lazy passes
_LOADED: set[str] = set()  # the groups every pass of which ensure_lazy has loaded
_GROUPS: list[str] = []  # the groups in the order their first pass was defined (numbers from 1)


def lazy_group_number(needed_by: str) -> int:
    """The number (1, 2, ...) a missing pass of group ``needed_by`` adds to its ``missing_status``."""
    return _GROUPS.index(needed_by) + 1


def lazy_group(number: int) -> str | None:
    """The group of lazy passes numbered ``number`` (:func:`lazy_group_number`), or None."""
    return _GROUPS[number - 1] if 1 <= number <= len(_GROUPS) else None


def lazy_passes() -> list[LazyPass]:
    """Every lazy pass defined so far (by the modules imported)."""
    return [p for passes in _LAZY.values() for p in passes]


def ensure_lazy(needed_by: str) -> int:
    """Compile (or load) every lazy pass registered for ``needed_by`` (e.g. ``"implicit_loops"``);
    returns how many were not loaded yet."""
    if needed_by in _LOADED:  # (a per-call check of the contact derivatives on loops: kept cheap)
        return 0
    if needed_by not in _LAZY:
        raise KeyError(f"no lazy pass is registered for {needed_by!r}")  # a typo, or a module not imported
    loaded = 0
    for lazy_pass in _LAZY[needed_by]:
        if not lazy_pass.ready:
            lazy_pass.ensure()
            loaded += 1
    _LOADED.add(needed_by)
    return loaded


def lazy(signature: str, missing_status: int, needed_by: str, **options):
    """Decorator: a pass compiled for one ``signature`` only when a model needs it, and called from
    compiled code through ``pass.call(...)``.

    A kernel that calls a :func:`shared` pass compiles it (or loads it) with itself. A lazy pass is
    not part of its callers: they load its address from a process-wide slot and call it, and the
    Python side compiles it (:meth:`LazyPass.ensure`) when a model that needs it gets a Data. A tree
    or explicit-cluster model thus never compiles the implicit loops' code. While the slot is empty
    the call returns ``missing_status`` plus the number of the pass's group (:func:`lazy_group`), so
    that the caller learns which group to load. Cached on disk as every kernel. ``options``
    as Numba's ``njit`` (``fastmath``...)."""

    def decorate(func):
        return LazyPass(func, signature, missing_status, needed_by, options)

    return decorate


sequence = njit(cache=True, inline="always")
"""Decorator: a thin sequence of calls, copied by Numba into its caller."""
