"""Architecture check for the loopdyn package: import cycles, private imports, long functions.

Run it as ``python tools/check_architecture.py`` (or through ``tests/test_architecture.py``).

It parses every module under ``src/loopdyn`` with :mod:`ast` — nothing is imported or executed — and
builds the graph "module A imports module B", counting imports inside functions as well as module-level
ones. A name imported from a package is followed to the submodule that defines it when the package's
``__init__`` re-exports it, so the graph links the modules that really depend on each other.

Failures (exit status 1):

* an import cycle (a strongly connected component of more than one module, or a module importing
  itself);
* a module importing another module's private name (``from .x import _helper``). A package's
  ``__init__`` re-exporting its own submodules' names is not private use;
* an entry kernel that does not rebind its arguments through ``borrowed(...)`` first;
* an entry kernel taking a Data's arrays first (``ib`` or ``ints``) that does not call ``acquire`` and
  ``release`` (a Data shared between threads must raise DataInUseError, not be written twice).

Report only (printed, never a failure):

* functions longer than ``--max-lines`` (default 100) lines;
* Numba kernels (functions decorated with ``njit``/``jit``) taking more than ``--max-args``
  (default 12) arguments.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "loopdyn"


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    exports: dict[str, str] = field(default_factory=dict)  # re-exported name -> defining module


def load_modules(src: Path) -> dict[str, Module]:
    """Every module of the package below ``src`` by dotted name."""
    modules = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        rel = path.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        name = ".".join(parts)
        modules[name] = Module(name, path, is_package, ast.parse(path.read_text(), str(path)))
    return modules


def resolve_base(module: Module, node: ast.ImportFrom) -> str | None:
    """The absolute module name that an ``ImportFrom`` node reads from (None outside the package)."""
    if node.level == 0:
        base = node.module or ""
        return base if base == PACKAGE or base.startswith(PACKAGE + ".") else None
    parts = module.name.split(".")
    if not module.is_package:
        parts = parts[:-1]
    if node.level > 1:
        parts = parts[: len(parts) - (node.level - 1)]
    if node.module:
        parts = parts + node.module.split(".")
    return ".".join(parts)


def collect_exports(modules: dict[str, Module]) -> None:
    """For each package ``__init__``, which submodule defines each name it imports from a submodule."""
    for mod in modules.values():
        if not mod.is_package:
            continue
        for node in mod.tree.body:
            if isinstance(node, ast.ImportFrom):
                base = resolve_base(mod, node)
                if base is None:
                    continue
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    mod.exports[alias.asname or alias.name] = target if target in modules else base


def defining_module(modules: dict[str, Module], base: str, name: str) -> str | None:
    """The module that ``from base import name`` really depends on."""
    if f"{base}.{name}" in modules:
        return f"{base}.{name}"
    seen = set()
    while base in modules and modules[base].is_package and name in modules[base].exports:
        if base in seen:
            break
        seen.add(base)
        target = modules[base].exports[name]
        if target == f"{base}.{name}" or target not in modules:
            return target if target in modules else base
        if not modules[target].is_package:
            return target
        base = target
    return base if base in modules else None


def import_edges(modules: dict[str, Module]) -> tuple[dict[str, set[str]], list[str]]:
    """The module graph, and the list of private-name imports across modules."""
    edges: dict[str, set[str]] = {name: set() for name in modules}
    private = []
    for mod in modules.values():
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                        if alias.name in modules and alias.name != mod.name:
                            edges[mod.name].add(alias.name)
            elif isinstance(node, ast.ImportFrom):
                base = resolve_base(mod, node)
                if base is None:
                    continue
                for alias in node.names:
                    target = defining_module(modules, base, alias.name)
                    if target is not None and target != mod.name:
                        edges[mod.name].add(target)
                    is_reexport = mod.is_package and base.startswith(mod.name + ".")
                    if alias.name.startswith("_") and not alias.name.startswith("__") and not is_reexport:
                        private.append(f"{mod.path}:{node.lineno}: imports private {base}.{alias.name}")
    return edges, private


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _is_kernel(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("njit", "jit"):
            return True
    return False


def _is_entry_kernel(fn: ast.FunctionDef) -> bool:
    """Decorated with ``@kernel(...)`` (algorithms.common.kernel): an entry point called from Python."""
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if (target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")) == "kernel":
            return True
    return False


def unborrowed_kernels(modules: dict[str, Module]) -> list[str]:
    """Entry kernels whose first statement (after the docstring) does not rebind their arguments
    through ``borrowed(...)`` (algorithms.borrow: no reference counting inside kernels)."""
    out = []
    for mod in modules.values():
        for node in ast.walk(mod.tree):
            if not isinstance(node, ast.FunctionDef) or not _is_entry_kernel(node):
                continue
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            first = body[0] if body else None
            call = first.value if isinstance(first, ast.Assign) else None
            name = getattr(getattr(call, "func", None), "id", "")
            if name != "borrowed":
                out.append(f"kernel without borrowed(...) first: {mod.path}:{node.lineno} {node.name}")
    return out


#: entry kernels that take a Data's arrays first but never run on a caller's Data: the batch kernels
#: (each thread of a batch has a private copy) and the baselines (not for threads, their docstring says)
UNLOCKED_MODULES = ("loopdyn.algorithms.batch", "loopdyn.baselines.")


def unlocked_kernels(modules: dict[str, Module]) -> list[str]:
    """Entry kernels taking a Data's arrays first (``ib`` or ``ints``) that do not mark the Data in use
    with ``acquire(...)`` and ``release(...)`` (algorithms.borrow: a Data shared between threads raises
    DataInUseError instead of being written by two kernels at once)."""
    out = []
    for mod in modules.values():
        if mod.name.startswith(UNLOCKED_MODULES):
            continue
        for node in ast.walk(mod.tree):
            if not isinstance(node, ast.FunctionDef) or not _is_entry_kernel(node):
                continue
            if not node.args.args or node.args.args[0].arg not in ("ib", "ints"):
                continue
            called = {getattr(c.func, "id", "") for c in ast.walk(node) if isinstance(c, ast.Call)}
            if not {"acquire", "release"} <= called:
                where = f"{mod.path}:{node.lineno} {node.name}"
                out.append(f"kernel writing a Data without acquire/release: {where}")
    return out


def function_report(modules: dict[str, Module], max_lines: int, max_args: int) -> tuple[list, list]:
    """Functions longer than ``max_lines`` and kernels with more than ``max_args`` arguments."""
    long_functions, wide_kernels = [], []
    for mod in modules.values():
        for node in ast.walk(mod.tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            length = node.end_lineno - node.lineno + 1
            where = f"{mod.path}:{node.lineno} {node.name}"
            if length > max_lines:
                long_functions.append((length, where))
            nargs = len(node.args.args) + len(node.args.kwonlyargs)
            if _is_kernel(node) and nargs > max_args:
                wide_kernels.append((nargs, where))
    return sorted(long_functions, reverse=True), sorted(wide_kernels, reverse=True)


def check(src: Path, max_lines: int = 100, max_args: int = 12, out=sys.stdout) -> int:
    """Print the report; return the number of failures (cycles + private imports)."""
    modules = load_modules(src)
    collect_exports(modules)
    edges, private = import_edges(modules)
    found = cycles(edges)
    for comp in found:
        print("import cycle: " + " <-> ".join(comp), file=out)
    for line in private:
        print(line, file=out)
    unborrowed = unborrowed_kernels(modules)
    for line in unborrowed:
        print(line, file=out)
    unlocked = unlocked_kernels(modules)
    for line in unlocked:
        print(line, file=out)
    long_functions, wide_kernels = function_report(modules, max_lines, max_args)
    print(f"report: {len(long_functions)} functions over {max_lines} lines", file=out)
    for n, where in long_functions:
        print(f"  {n:4d} lines  {where}", file=out)
    print(f"report: {len(wide_kernels)} kernels with more than {max_args} arguments", file=out)
    for n, where in wide_kernels:
        print(f"  {n:4d} args   {where}", file=out)
    failures = len(found) + len(private) + len(unborrowed) + len(unlocked)
    print(
        f"{len(modules)} modules: {len(found)} import cycles, {len(private)} private imports, "
        f"{len(unborrowed)} kernels without borrowed, {len(unlocked)} kernels without acquire/release",
        file=out,
    )
    return failures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=Path(__file__).resolve().parents[1] / "src")
    parser.add_argument("--max-lines", type=int, default=100)
    parser.add_argument("--max-args", type=int, default=12)
    args = parser.parse_args(argv)
    return 1 if check(args.src, args.max_lines, args.max_args) else 0


if __name__ == "__main__":
    sys.exit(main())
