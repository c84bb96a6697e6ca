"""The package's import structure: no module of simkit imports itself back through others
(an import circle), and no layer imports one above it (docs/design.md, "Layers").

Imports are read from the source with ``ast``, at any depth (an import inside a function is
as much a dependency as one at the top), except those under ``if TYPE_CHECKING:``, which
only type checkers run."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "simkit"

# The layers of docs/design.md, lowest first: a module may import from its own layer and the
# ones before it. The package root (simkit/__init__.py, __main__.py, types.py, and torch.py /
# jax.py, the public names of the bridges) is the public face over all of them.
LAYERS = [("simkit.core",), ("simkit.autograd",), ("simkit.kernels",), ("simkit.sim",), ("simkit.optim",),
          ("simkit.bridges",), ("simkit.render",), ("simkit.scene", "simkit.cli")]
ROOT_MODULES = {"simkit", "simkit.__main__", "simkit.types", "simkit.torch", "simkit.jax"}
# The command line sits over the whole package: it may read the root (its __version__).
READS_ROOT = ("simkit.cli",)

# Known imports that break the rules, each to be removed by the issue named beside it. A new
# violation fails the test; so does an entry here that no longer happens (keep the list true).
KNOWN = {
    # issue 34 item 2: the physics kernels are written against the public ``import simkit as sk``
    **{(f"simkit.kernels.{name}", "simkit"): "issue 34 item 2" for name in (
        "articulation", "bending", "bodies", "body_contact", "broad_phase", "closest_point", "cloth_self_contact",
        "cloth_shape_contact",
        "contact", "contact_active_set", "contact_elliptic", "contact_params", "contact_rows", "contact_solve",
        "convex", "ellipsoid", "featherstone", "hash_grid", "heightfield", "joints", "limit_rows", "mesh_contact", "meshes",
        "particle_contact", "particles", "revolved_shapes", "shapes", "springs", "tets", "triangles", "xpbd",
        "xpbd_bodies", "xpbd_body_contact", "xpbd_mesh_contact")},
    ("simkit.optim.updates", "simkit"): "issue 34 item 2",
    ("simkit.scene.objectives", "simkit"): "issue 34 item 2",
    # issue 34 item 3, not broken yet because issue 31 is reworking core/builtins.py: it imports
    # the modules that add entries to its table after defining it, and they import the table's
    # helpers back from it (the fix: the table and its helpers in a module below all of them)
    ("simkit.core.builtins", "simkit.core.mesh_builtins"): "issue 34 item 3 (after issue 31)",
    ("simkit.core.builtins", "simkit.core.spatial_builtins"): "issue 34 item 3 (after issue 31)",
    ("simkit.core.builtins", "simkit.core.warp_math_builtins"): "issue 34 item 3 (after issue 31)",
    ("simkit.core.builtins", "simkit.core.linalg_builtins"): "issue 34 item 3 (after issue 31)",
    ("simkit.core.builtins", "simkit.core.random_builtins"): "issue 34 item 3 (after issue 31)",
    ("simkit.core.builtins", "simkit.core.rotation_builtins"): "issue 34 item 3 (after issue 31)",
    ("simkit.core.builtins", "simkit.core.mesh"): "issue 34 item 3 (after issue 31)",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _type_checking_only(node: ast.AST) -> bool:
    t = getattr(node, "test", None)
    return isinstance(node, ast.If) and (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING" or
                                         isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(node: ast.AST):
    """The import statements under ``node``, at any depth, but none under ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        elif not _type_checking_only(child):
            yield from _imports(child)


def imported_modules(name: str) -> set[str]:
    """The simkit modules that module ``name`` imports (``from pkg import sub`` counts as ``pkg.sub``)."""
    path = MODULES[name]
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in _imports(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
            continue
        base = node.module
        if node.level:
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
        found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names)
    return {m for m in found if m in MODULES and m != name}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return {name: imported_modules(name) for name in MODULES}


def layer_of(name: str) -> int | None:
    for rank, prefixes in enumerate(LAYERS):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return rank
    return None


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` as ``[a, b, ..., a]``, or None when it has none."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        stack.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in state and (cycle := visit(w)) is not None:
                return cycle
        stack.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state and (cycle := visit(v)) is not None:
            return cycle
    return None


def test_the_cycle_finder_names_a_circle_and_accepts_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_relative_imports_and_imports_inside_functions_are_read():
    assert "simkit.core.array_base" in imported_modules("simkit.core.creation")       # from .array_base import
    assert "simkit.core.codegen_tangent" in imported_modules("simkit.core.modules")   # inside a method


def test_imports_only_type_checkers_run_are_not_dependencies():
    assert "simkit.core.kernel" not in imported_modules("simkit.core.modules")       # if TYPE_CHECKING:


def test_no_module_imports_itself_back_through_others(graph):
    pruned = {v: {w for w in ws if (v, w) not in KNOWN} for v, ws in graph.items()}
    cycle = find_cycle(pruned)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_no_layer_imports_one_above_it(graph):
    wrong = []
    for v, ws in sorted(graph.items()):
        here = layer_of(v)
        if here is None:
            assert v in ROOT_MODULES, f"{v} is in no layer of docs/design.md: give it a home there"
            continue
        for w in sorted(ws):
            there = layer_of(w)
            above = there is None or there > here
            if w == "simkit" and v.startswith(READS_ROOT):
                above = False
            if above and (v, w) not in KNOWN:
                wrong.append(f"{v} imports {w}")
    assert not wrong, "imports from a layer above: " + "; ".join(wrong)


def test_every_known_exception_still_happens(graph):
    stale = [f"{v} -> {w} ({why})" for (v, w), why in KNOWN.items() if w not in graph.get(v, set())]
    assert not stale, "these are fixed: remove them from KNOWN in tests/test_layers.py: " + "; ".join(stale)
