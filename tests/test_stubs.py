"""simkit/__init__.pyi, the stub editors and type checkers read for ``import simkit``: it is
what tools/gen_stubs.py writes for the package as it is now, it parses, and it names every
public attribute, the kernel builtins added at run time included (typed overloads where the
builtin table has several entries). The stubs of the public aliases simkit.torch, simkit.jax
and simkit.cuda name what their modules export. simkit/py.typed ships with the package."""

import ast
import importlib.util
import tomllib
from pathlib import Path

import pytest

import simkit as sk

ROOT = Path(__file__).resolve().parents[1]
STUB = ROOT / "simkit" / "__init__.pyi"
REGENERATE = "regenerate it: python tools/gen_stubs.py (and commit simkit/*.pyi)"


@pytest.fixture(scope="module")
def gen_stubs():
    spec = importlib.util.spec_from_file_location("gen_stubs", ROOT / "tools" / "gen_stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def stub() -> ast.Module:
    return ast.parse(STUB.read_text())


def defined(stub: ast.Module) -> dict[str, list[ast.stmt]]:
    """The statements of the stub that define each name."""
    out: dict[str, list[ast.stmt]] = {}
    for node in stub.body:
        if isinstance(node, ast.ImportFrom):
            names = [a.asname or a.name for a in node.names]
        elif isinstance(node, ast.FunctionDef):
            names = [node.name]
        elif isinstance(node, ast.AnnAssign):
            names = [node.target.id]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets]
        else:
            names = []
        for n in names:
            out.setdefault(n, []).append(node)
    return out


def test_the_committed_stub_is_what_the_generator_writes_now(gen_stubs):
    assert STUB.read_text() == gen_stubs.generate(), f"simkit/__init__.pyi is stale: {REGENERATE}"


@pytest.mark.parametrize("name", ["torch", "jax", "cuda"])
def test_the_stub_of_a_public_alias_names_what_its_module_exports(gen_stubs, name):
    path = ROOT / "simkit" / f"{name}.pyi"
    assert path.read_text() == gen_stubs.stubs()[path], f"simkit/{name}.pyi is stale: {REGENERATE}"
    target = gen_stubs.ALIASES[name]
    exported = {a.asname for n in ast.parse(path.read_text()).body if isinstance(n, ast.ImportFrom) for a in n.names}
    if name == "cuda":
        assert exported == set(sk.cuda.__all__)
    assert exported and all(n.module == target for n in ast.parse(path.read_text()).body
                            if isinstance(n, ast.ImportFrom))


def test_every_public_attribute_of_simkit_is_in_the_stub(stub):
    names = defined(stub)
    public = {k for k in dir(sk) if not k.startswith("_") and not isinstance(getattr(sk, k), type(sk))}
    missing = sorted(public - set(names))
    assert not missing, f"simkit/__init__.pyi lacks {missing}: {REGENERATE}"


def test_the_lazy_scene_functions_are_in_the_stub(stub):
    assert {"sweep", "multi_start"} <= set(defined(stub))


def test_a_builtin_with_several_table_entries_gets_one_typed_overload_each(stub):
    dots = defined(stub)["dot"]
    assert len(dots) == len(sk.core.builtins.TABLE["dot"]) > 1
    assert all(any(isinstance(d, ast.Name) and d.id == "overload" for d in f.decorator_list) for f in dots)
    assert {ast.unparse(f.args.args[0].annotation) for f in dots} == {"_Vector", "_Quat"}


def test_a_builtin_with_one_entry_gets_its_parameter_names_and_types(stub):
    (sin,) = defined(stub)["sin"]
    assert ast.unparse(sin.args) == "x: _builtins.float"
    assert ast.unparse(sin.returns) == "_builtins.float"


def test_a_variadic_builtin_takes_star_args(stub):
    (rows,) = defined(stub)["matrix_from_rows"]
    assert rows.args.vararg is not None and rows.args.vararg.arg == "rows"


def test_the_stub_does_not_depend_on_which_submodules_happen_to_be_imported(gen_stubs):
    import simkit.scene  # noqa: F401  (an attribute of simkit now, but not one __init__.py imports)

    assert "scene" not in defined(ast.parse(gen_stubs.generate()))


def test_py_typed_and_the_stubs_ship_with_the_package():
    assert (ROOT / "simkit" / "py.typed").is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert {"py.typed", "*.pyi"} <= set(data["simkit"])
