"""import-linter contract types that see what grimp alone does not (``[tool.importlinter]`` in pyproject.toml).

grimp reads ``import`` statements (those under ``if TYPE_CHECKING:`` too, with
``exclude_type_checking_imports = false``).  Two kinds of import escape it, and every contract type below adds them
to the graph before checking, so that no contract has a hole there:

* **Lazy exports.**  ``fedcheck``, ``fedcheck.problems`` and ``fedcheck.algorithms`` load names on first use through
  a module ``__getattr__`` and a map ``{name: "module.path"}``: ``from fedcheck import verify`` imports
  ``fedcheck.api``, but grimp sees an import of the root package only.  Each use of such a name --
  ``from P import X``, ``from P import *``, ``P.X`` after ``import P`` (or an alias), anywhere in a module,
  including under ``if TYPE_CHECKING:`` and inside functions -- counts as an import of the module the map names (a
  map entry naming another lazy package is followed).  A package that defines ``__getattr__`` without such a map
  is an error: its loads could not be checked.
* **Computed module names.**  ``importlib.import_module("a.b")`` imports ``a.b``;
  ``importlib.import_module(f"a.b.{name}")`` may import any module of ``a.b``, so it counts as importing each.

The contract types: ``resolved_layers`` (layers; with ``every_module = true`` every module of the root packages
must sit in a layer, except those named in ``outside_layers``), ``resolved_independence``,
``resolved_acyclic_siblings``, and ``no_circles`` (no module takes part in an import circle, at any level:
between siblings, and between a package's ``__init__`` and the modules in it).  Broken contracts name each
offending import with its module and line.
"""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import grimp
from importlinter.application import output
from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
from importlinter.contracts.independence import IndependenceContract
from importlinter.contracts.layers import LayersContract
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck

__all__ = ["module_files", "lazy_maps", "resolved_imports", "add_resolved_imports", "import_circles",
           "ResolvedLayers", "ResolvedIndependence", "ResolvedAcyclicSiblings", "NoCircles"]


def module_files(graph: grimp.ImportGraph, roots=None) -> dict[str, Path]:
    """The source file of each module of the graph (found from the root packages' locations, without importing
    them)."""
    roots = roots or sorted({m.split(".")[0] for m in graph.modules})
    files = {}
    for root in roots:
        spec = importlib.util.find_spec(root)
        if spec is None or not spec.submodule_search_locations:
            raise ValueError(f"cannot locate the package {root!r}")
        base = Path(list(spec.submodule_search_locations)[0])
        for module in graph.modules:
            if module != root and not module.startswith(root + "."):
                continue
            parts = module.split(".")[1:]
            package = base.joinpath(*parts, "__init__.py")
            if package.exists() or not parts:
                files[module] = package
            else:
                files[module] = base.joinpath(*parts[:-1], parts[-1] + ".py")
    return files


def _parse(path: Path) -> tuple[ast.Module, list[str]]:
    src = path.read_text(encoding="utf-8")
    return ast.parse(src, filename=str(path)), src.splitlines()


def lazy_maps(graph: grimp.ImportGraph, files: dict[str, Path]) -> dict[str, dict[str, str]]:
    """``{package: {name: module}}`` for every package that loads names lazily (a module-level ``__getattr__``):
    the module-level dict literals of that ``__init__`` whose keys are strings and whose values name modules."""
    maps = {}
    for module, path in files.items():
        if path.name != "__init__.py":
            continue
        tree, _ = _parse(path)
        if not any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
            continue
        found: dict[str, str] = {}
        for node in tree.body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            pairs = _string_map(value) if isinstance(value, ast.Dict) else None
            if not pairs or not all(v.split(".")[0] == module.split(".")[0] for v in pairs.values()):
                continue
            missing = sorted(f"{k!r}: {v!r}" for k, v in pairs.items() if v not in graph.modules)
            if missing:
                raise ValueError(f"{path}:{node.lineno}: the lazy exports of {module} name modules that do not "
                                 f"exist: {', '.join(missing)}")
            found.update(pairs)
        if not found:
            raise ValueError(f"{path}: {module} defines __getattr__ but no {{name: 'module'}} map of its lazy "
                             f"exports; the contracts cannot see what it loads")
        maps[module] = found
    return maps


def _strings(node: ast.AST) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                                       for e in node.elts):
        return [e.value for e in node.elts]
    return None


def _string_map(node: ast.Dict) -> dict[str, str] | None:
    """A dict literal of strings, read without running it: ``{"a": "m"}``, with ``**{...}`` and
    ``**dict.fromkeys(("a", "b"), "m")`` spliced in; None when it is anything else."""
    out: dict[str, str] = {}
    for key, value in zip(node.keys, node.values):
        if key is not None:
            k, v = _strings(key), _strings(value)
            if not k or not v or len(k) != 1 or len(v) != 1 or not isinstance(key, ast.Constant):
                return None
            out[k[0]] = v[0]
        elif isinstance(value, ast.Dict):
            inner = _string_map(value)
            if inner is None:
                return None
            out.update(inner)
        elif (isinstance(value, ast.Call) and _dotted(value.func) == ["dict", "fromkeys"] and len(value.args) == 2
              and not value.keywords and _strings(value.args[0]) is not None
              and isinstance(value.args[1], ast.Constant) and isinstance(value.args[1].value, str)):
            out.update(dict.fromkeys(_strings(value.args[0]), value.args[1].value))
        else:
            return None
    return out


def _resolve(maps: dict[str, dict[str, str]], package: str, name: str) -> str | None:
    target, seen = None, set()
    while package in maps and name in maps[package] and (package, name) not in seen:
        seen.add((package, name))
        target = package = maps[package][name]
    return target


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _dotted(node: ast.AST) -> list[str] | None:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(names)]


_CACHE: dict = {}


def resolved_imports(graph: grimp.ImportGraph, files: dict[str, Path] | None = None):
    """The imports grimp does not see, as ``(importer, imported, line_number, line_contents)``."""
    files = files if files is not None else module_files(graph)
    key = tuple(sorted((m, str(p), p.stat().st_mtime_ns) for m, p in files.items()))
    if key not in _CACHE:                  # each contract checks a copy of one graph: read the files once
        _CACHE.clear()
        _CACHE[key] = _resolved_imports(graph, files)
    return _CACHE[key]


def _resolved_imports(graph: grimp.ImportGraph, files: dict[str, Path]):
    maps = lazy_maps(graph, files)
    # only a file that could name a lazy export or compute a module name is parsed (parsing all takes seconds)
    lazy = "|".join(re.escape(p) for p in maps) or "(?!)"
    maybe = re.compile(rf"import_module|\bimport\s+({lazy})\b|\bfrom\s+(\.+|({lazy})\s)")
    found = set()
    for module, path in sorted(files.items()):
        if not maybe.search(path.read_text(encoding="utf-8")):
            continue
        tree, lines = _parse(path)
        is_package = path.name == "__init__.py"
        aliases: dict[str, str] = {}      # a name bound by an import -> the module it is

        def add(target, node):
            if target and target != module:
                found.add((module, target, node.lineno, lines[node.lineno - 1].strip()))

        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        aliases[a.asname] = a.name
                    else:
                        aliases[a.name.split(".")[0]] = a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                package = _absolute(module, is_package, node)
                for a in node.names:
                    if a.name == "*":
                        for name in maps.get(package, {}):
                            add(_resolve(maps, package, name), node)
                    elif f"{package}.{a.name}" in graph.modules:
                        aliases[a.asname or a.name] = f"{package}.{a.name}"
                    else:
                        add(_resolve(maps, package, a.name), node)
            elif (isinstance(node, ast.Call) and node.args and _dotted(node.func) in (["importlib", "import_module"],
                                                                                      ["import_module"])):
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value in graph.modules:
                    add(arg.value, node)
                elif (isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant)
                      and str(arg.values[0].value).endswith(".")):
                    package = str(arg.values[0].value)[:-1]
                    if package in graph.modules:
                        for child in sorted(graph.find_children(package)):
                            add(child, node)
        for node in ast.walk(tree):       # P.X after `import P` (or an alias of P or of one of its modules)
            if isinstance(node, ast.Attribute):
                names = _dotted(node)
                if not names or names[0] not in aliases:
                    continue
                full = aliases[names[0]].split(".") + names[1:]
                for i in range(1, len(full)):
                    if ".".join(full[:i]) in maps:
                        add(_resolve(maps, ".".join(full[:i]), full[i]), node)
    return sorted(found)


def add_resolved_imports(graph: grimp.ImportGraph, files: dict[str, Path] | None = None) -> int:
    """Add the imports grimp does not see to ``graph``; returns how many."""
    found = resolved_imports(graph, files)
    for importer, imported, line, contents in found:
        graph.add_import(importer=importer, imported=imported, line_number=line, line_contents=contents)
    return len(found)


def _roots(contract: Contract) -> list[str]:
    return list(contract.session_options["root_packages"])


def import_circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The import circles between the modules of ``graph``: its strongly connected components of more than one
    module (and modules importing themselves), each sorted."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index, low, stack, on_stack, circles = {}, {}, [], set(), []
    counter = 0
    for start in sorted(edges):          # Tarjan's algorithm, iterative
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            if i < len(edges[v]):
                work.append((v, i + 1))
                w = edges[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1 or v in edges[v]:
                    circles.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return sorted(circles)


class _SeesResolvedImports:
    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        add_resolved_imports(graph, module_files(graph, _roots(self)))
        return super().check(graph, verbose)


class ResolvedIndependence(_SeesResolvedImports, IndependenceContract):
    type_name = "resolved_independence"


class ResolvedAcyclicSiblings(_SeesResolvedImports, AcyclicSiblingsContract):
    type_name = "resolved_acyclic_siblings"


class ResolvedLayers(_SeesResolvedImports, LayersContract):
    """Layers over the resolved graph; with ``every_module = true``, each module of the root packages is a layer or
    inside one, except the modules named in ``outside_layers`` (import-linter's own ``exhaustive`` needs
    ``containers``, which cannot hold layers from two root packages)."""
    type_name = "resolved_layers"

    every_module = fields.BooleanField(default=False)
    outside_layers = fields.SetField(subfield=fields.StringField(), required=False)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        check = super().check(graph, verbose)
        if not self.every_module:
            return check
        layered = [t.name for layer in self.layers for t in layer.module_tails]     # type: ignore[attr-defined]
        allowed = set(self.outside_layers or ())                                      # type: ignore[arg-type]
        outside = sorted(m for m in graph.modules if m not in allowed
                         and not any(m == x or m.startswith(x + ".") for x in layered))
        check.metadata["outside_layers"] = outside
        check.kept = check.kept and not outside
        return check

    def render_broken_contract(self, check: ContractCheck) -> None:
        super().render_broken_contract(check)
        if check.metadata.get("outside_layers"):
            output.print("These modules are in no layer (every module must be):")
            output.new_line()
            for module in check.metadata["outside_layers"]:
                output.print_error(f"- {module}", bold=False)
            output.new_line()


class NoCircles(Contract):
    """No import circle between any modules of the root packages (the resolved graph)."""
    type_name = "no_circles"

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        add_resolved_imports(graph, module_files(graph, _roots(self)))
        circles = []
        for component in import_circles(graph):
            links = []
            for importer in component:
                for imported in sorted(graph.find_modules_directly_imported_by(importer) & set(component)):
                    lines = sorted({d["line_number"] for d in graph.get_import_details(importer=importer,
                                                                                       imported=imported)})
                    links.append((importer, imported, lines))
            circles.append(links)
        return ContractCheck(kept=not circles, warnings=[], metadata={"circles": circles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for links in check.metadata["circles"]:
            modules = sorted({m for link in links for m in link[:2]})
            output.print_error(f"An import circle between {', '.join(modules)}:")
            output.new_line()
            for importer, imported, lines in links:
                output.indent_cursor()
                output.print_error(f"{importer} -> {imported} ({', '.join(f'l.{n}' for n in lines)})", bold=False)
            output.new_line()
