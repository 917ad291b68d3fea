"""No module of fedcheck/ or theorems/ imports another module's private name (``from fedcheck.x import _y``): a name
shared between modules is public (no leading underscore, documented) or the code lives where it is used.  The modules
of one paper's folder (``theorems/<paper>/``) are one unit: they may share their helpers.

``python tests/test_private_imports.py`` lists every such import (file, line, module, name)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (module, name) -> why another module may import this private name (none: every shared name is public; a name
# kept here must say why, and an entry nothing imports any more is removed: test_the_allow_list_is_current)
ALLOWED: dict = {}


def _module_of(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _paper(module: str) -> str | None:
    """``theorems.<paper>`` of a module of a paper's folder (its modules share their helpers: one folder, one unit)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "theorems" and len(parts) > 2 else None


def private_imports(root: Path = ROOT) -> list[tuple[str, int, str, str]]:
    """``(file, line, module, name)`` of every ``from <module> import _name`` in fedcheck/ and theorems/ whose module
    is another fedcheck or theorems module (relative imports resolved)."""
    out = []
    for path in sorted([*root.glob("fedcheck/**/*.py"), *root.glob("theorems/**/*.py")]):
        me = _module_of(path, root)
        package = me if path.name == "__init__.py" else me.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] not in ("fedcheck", "theorems") or source == me:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    out.append((str(path.relative_to(root)), node.lineno, source, alias.name))
    return out


def _violations():
    return [(f, line, m, n) for f, line, m, n in private_imports()
            if (m, n) not in ALLOWED and not (_paper(m) and _paper(m) == _paper(_module_of(ROOT / f)))]


def test_no_module_imports_another_modules_private_name():
    bad = _violations()
    assert not bad, ("private names imported from another module (make the name public and document it, or move "
                     "the code where it is used):\n" + "\n".join(f"  {f}:{line}: from {m} import {n}"
                                                                  for f, line, m, n in bad))


def test_the_allow_list_is_current():
    used = {(m, n) for _, _, m, n in private_imports()}
    stale = sorted(set(ALLOWED) - used)
    assert not stale, f"no longer imported across modules, remove from ALLOWED: {stale}"


def test_the_check_sees_a_planted_private_import(tmp_path):
    """The scan finds an absolute and a relative import of another module's private name (and not a module's own)."""
    pkg = tmp_path / "fedcheck" / "sub"
    pkg.mkdir(parents=True)
    (tmp_path / "fedcheck" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def _hidden():\n    pass\n")
    (pkg / "b.py").write_text("from fedcheck.sub.a import _hidden\nfrom .a import _hidden as h\n"
                              "from fedcheck.sub.b import _mine\n")
    assert private_imports(tmp_path) == [("fedcheck/sub/b.py", 1, "fedcheck.sub.a", "_hidden"),
                                         ("fedcheck/sub/b.py", 2, "fedcheck.sub.a", "_hidden")]


if __name__ == "__main__":
    for f, line, m, n in private_imports():
        print(f"{f}:{line}: from {m} import {n}")
