"""Every import inside meditod_hub points down the floors of `meditod_hub.layers.LAYERS`, and the
annotation portal's ES modules (apps/annotate/static/*.js) import each other without a cycle.

Imports are read with `ast` from every module, at module level and inside functions (a deferred
import is still a dependency), so nothing is imported to check them; the scripts' imports are
read from their text."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from meditod_hub.layers import LAYERS, floor_of

PACKAGE = Path(__file__).resolve().parents[1] / "meditod_hub"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    rel = PACKAGE.joinpath(*name.split(".")[1:])
    return rel.with_suffix(".py").is_file() or (rel / "__init__.py").is_file()


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "meditod_hub"


def _imports_under(node: ast.AST, in_function: bool, package: str):
    """(line, imported module, inside a function) of every import under `node`; relative
    imports resolved against `package`."""
    for child in ast.iter_child_nodes(node):
        targets: list[str] = []
        if isinstance(child, ast.Import):
            targets = [a.name for a in child.names]
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:
                parts = package.split(".")
                parts = parts[:len(parts) - (child.level - 1)]
                base = ".".join(parts + ([child.module] if child.module else []))
            targets = [f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base
                       for a in child.names]
        for target in dict.fromkeys(targets):
            if target == "meditod_hub" or target.startswith("meditod_hub."):
                yield child.lineno, target, in_function
        yield from _imports_under(child, in_function or isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)), package)


def imports() -> list[tuple[str, int, str, str, bool]]:
    """(file, line, importing module, imported module, inside a function) for every import of a
    meditod_hub module; `from meditod_hub.x import y` names `meditod_hub.x.y` when y is a module."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [(str(path.relative_to(PACKAGE.parent)), line, module, target, inner)
                  for line, target, inner in _imports_under(tree, False, package)]
    return found


def unit_graph() -> dict[str, set[str]]:
    """Unit -> the units it imports."""
    graph: dict[str, set[str]] = defaultdict(set)
    for _, _, module, target, _ in imports():
        a, b = _unit(module), _unit(target)
        if a != b and b != "meditod_hub":
            graph[a].add(b)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return groups


def upward_imports() -> list[str]:
    """Every import that points up a floor."""
    return [f"{file}:{line}: {module} (floor {floor_of(_unit(module))}) imports {target} "
            f"(floor {floor_of(_unit(target))}){' inside a function' if inner else ''}"
            for file, line, module, target, inner in imports()
            if floor_of(_unit(target)) > floor_of(_unit(module))]


def test_every_unit_is_on_a_floor():
    units = {_unit(_module_name(p)) for p in PACKAGE.rglob("*.py")} - {"meditod_hub"}
    declared = {u for floor in LAYERS for u in floor}
    assert units <= declared, f"units on no floor of meditod_hub.layers: {sorted(units - declared)}"
    assert not declared - units, f"floors name missing units: {sorted(declared - units)}"


def test_the_reader_sees_imports_at_every_depth():
    """The parser itself: a module-level and a function-level import of a known pair."""
    found = {(module, target, inner) for _, _, module, target, inner in imports()}
    assert ("meditod_hub.files", "meditod_hub.errors", False) in found
    assert any(inner for *_, inner in found)


def test_no_import_points_up():
    upward = upward_imports()
    assert not upward, f"{len(upward)} upward import(s):\n" + "\n".join(upward)


@pytest.fixture(scope="module")
def loaded_by_floor() -> list[list[str]]:
    """For each floor, the kit's modules in sys.modules once every module of that floor and the
    ones under it is imported, floor by floor, in one fresh interpreter (imports only add, so
    this is what a fresh interpreter importing floors 0..f alone would hold)."""
    floors = [sorted(_module_name(p) for p in PACKAGE.rglob("*.py")
                     if floor_of(_unit(_module_name(p))) == floor) for floor in range(len(LAYERS))]
    code = ("import importlib, json, sys\n"
            f"for modules in {floors!r}:\n"
            "    for name in modules:\n"
            "        try:\n            importlib.import_module(name)\n"
            "        except ModuleNotFoundError as missing:  # an optional extra (lighteval) only\n"
            "            if (missing.name or '').startswith('meditod_hub'):\n                raise\n"
            "    print(json.dumps(sorted(m for m in sys.modules if m.startswith('meditod_hub.'))))")
    done = subprocess.run([sys.executable, "-c", code], cwd=PACKAGE.parent, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()[-len(LAYERS):]]


@pytest.mark.parametrize("floor", range(len(LAYERS) - 1))
def test_loading_a_floor_loads_nothing_above_it(floor, loaded_by_floor):
    """What the reader of source cannot see (an import by name, a plugin): importing every
    module of floors 0..f leaves no module of a higher floor in sys.modules."""
    above = [m for m in loaded_by_floor[floor] if floor_of(_unit(m)) > floor]
    assert not above, f"loading floors 0-{floor} loads {above}"


def test_no_cycle_between_units():
    groups = cycles(unit_graph())
    if groups:
        graph = unit_graph()
        lines = [f"{' <-> '.join(group)}: " + "; ".join(
            f"{a} -> {b}" for a in group for b in sorted(graph[a]) if b in group)
            for group in groups]
        pytest.fail(f"{len(groups)} import cycle(s) between units:\n" + "\n".join(lines))


def _type_checking_lines() -> set[tuple[str, int]]:
    """(file, line) of the imports under `if TYPE_CHECKING:`: annotations only, never run."""
    lines = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
                lines |= {(str(path.relative_to(PACKAGE.parent)), child.lineno)
                          for stmt in node.body for child in ast.walk(stmt)
                          if isinstance(child, (ast.Import, ast.ImportFrom))}
    return lines


def module_graph() -> dict[str, set[str]]:
    """Module -> the modules of its own unit it imports when it runs (module level or in a
    function; `if TYPE_CHECKING:` imports left out)."""
    skip = _type_checking_lines()
    graph: dict[str, set[str]] = defaultdict(set)
    for file, line, module, target, _ in imports():
        if _unit(module) == _unit(target) and module != target and (file, line) not in skip:
            graph[module].add(target)
    return graph


def test_no_cycle_between_modules_of_one_unit():
    """Inside a unit too, imports run one way: a deferred import never breaks a circle (the layer
    rule), so a circle shows here even when one side imports inside a function (issue 37)."""
    graph = module_graph()
    assert graph["meditod_hub.data.tasks"], "the reader sees no unit-internal import"
    groups = cycles(graph)
    assert not groups, f"{len(groups)} import cycle(s) inside a unit:\n" + "\n".join(
        f"{' <-> '.join(group)}: " + "; ".join(
            f"{a} -> {b}" for a in group for b in sorted(graph[a]) if b in group)
        for group in groups)


def test_the_cycle_reader_sees_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def _deferred_import_blocks(path: Path):
    """Each run of consecutive import statements inside a function: (first line, last line)."""
    def walk(node: ast.AST, inner: bool):
        for field in ("body", "orelse", "finalbody", "handlers"):
            run: list[ast.stmt] = []
            for stmt in [*(getattr(node, field, None) or []), None]:
                if inner and isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    run.append(stmt)
                    continue
                if run:
                    yield run[0].lineno, run[-1].end_lineno
                    run = []
                if stmt is not None:
                    yield from walk(stmt, inner or isinstance(
                        stmt, (ast.FunctionDef, ast.AsyncFunctionDef)))
    yield from walk(ast.parse(path.read_text(encoding="utf-8")), False)


def deferred_imports_without_a_reason() -> list[str]:
    """Every function-level import (of any module) whose run of imports carries no comment, on
    one of its lines or the line above it: the reason it is deferred (layers.py's rule)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for first, last in _deferred_import_blocks(path):
            commented = any("#" in line for line in lines[first - 1:last]) \
                or lines[first - 2].lstrip().startswith("#")
            if not commented:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{first}: {lines[first - 1].strip()}")
    return found


def test_every_deferred_import_says_why():
    """An import inside a function is kept only where start-up time needs it (a heavy library,
    an optional extra), with a comment saying so; anything else is imported at module level
    (issue 37: 172 deferred imports without a reason before)."""
    found = deferred_imports_without_a_reason()
    assert not found, (f"{len(found)} deferred import(s) without a reason: import at module "
                       "level, or add a comment (`# deferred: torch is slow to import`):\n"
                       + "\n".join(found))


def test_the_deferred_import_reader_sees_a_bare_one(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import os\n\n\ndef f():\n    import json\n    import re\n\n    return 1\n\n\n"
                      "def g():\n    # deferred: why\n    import json\n    import re\n")
    assert list(_deferred_import_blocks(module)) == [(5, 6), (13, 14)]


# ---- the annotation portal's scripts: ES modules, every import one way -------------------------

STATIC = PACKAGE / "apps" / "annotate" / "static"
# `import {a} from "./x.js"`, `export {a} from "./x.js"`, `import "./x.js"`, `import("./x.js")`
JS_IMPORT = re.compile(r"""\b(?:from|import)\s*\(?\s*["']\./([\w.-]+\.js)["']""")


def script_graph() -> dict[str, set[str]]:
    """Portal module -> the portal modules it imports, for every static/*.js file."""
    return {path.name: set(JS_IMPORT.findall(path.read_text(encoding="utf-8")))
            for path in sorted(STATIC.glob("*.js"))}


def test_no_cycle_between_the_portal_scripts():
    """The store (state.js) imports no view: the views subscribe to it, and main.js, which no
    module imports, wires them; so the page's imports form no cycle (issue 27)."""
    graph = script_graph()
    edges = sorted((a, b) for a, targets in graph.items() for b in targets)
    print(f"portal scripts: {len(graph)} modules, {len(edges)} imports: "
          + ", ".join(f"{a} -> {b}" for a, b in edges))
    assert ("main.js", "state.js") in edges, "the reader sees no import"
    assert {b for _, b in edges} <= set(graph), "an import names a module that is not shipped"
    assert graph["state.js"] <= {"api.js", "dom.js"}, "the store imports a view"
    groups = cycles(graph)
    assert not groups, f"{len(groups)} import cycle(s) between the portal's scripts:\n" + "\n".join(
        f"{' <-> '.join(group)}: " + "; ".join(
            f"{a} -> {b}" for a in group for b in sorted(graph[a]) if b in group)
        for group in groups)


COMMAND_UNITS = {"cli", "commands", "arguments"}  # arguments: the kit's parsers themselves
PARSERS = {*(f"meditod_hub.arguments.{name}" for name in (
    "parse_args", "parse_known_args", "parse_config", "flag_names", "KitParser")),
    "trl.TrlParser", "argparse"}
# A command line handed to a function, by the names the kit gives one (issue 47: models/recipes.py
# took train's argv and overrides); the library takes what a command parsed from it instead.
ARGV_PARAMETERS = {"argv", "overrides"}
# The library functions that take a command line without parsing one, and why.
ARGV_TAKERS = {
    "meditod_hub.errors.run_main": "runs a command's main(argv), only removing --debug",
    "meditod_hub.errors.debug_requested": "run_main's test for --debug",
    "meditod_hub.netwait.run": "a child process's command line (pip), run, not parsed",
}


def argv_parameters(module: str, tree: ast.AST) -> list[str]:
    """`line: def f(argv)` for each function of `module` (parsed as `tree`) with a parameter named
    as a command line (`ARGV_PARAMETERS`), the `ARGV_TAKERS` excepted."""
    return [f"{node.lineno}: def {node.name}({a.arg})" for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and f"{module}.{node.name}" not in ARGV_TAKERS
            for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            if a.arg in ARGV_PARAMETERS]


def argv_readers() -> dict[str, list[str]]:
    """Library module -> how it reads a command line: a module-level `main`, a flag parser
    imported (the kit's, TRL's or argparse), `sys.argv`, or a function taking a parameter named
    as a command line (`ARGV_PARAMETERS`; `ARGV_TAKERS` excepted)."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        if _unit(module) in COMMAND_UNITS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found[module] += [f"{node.lineno}: def main" for node in tree.body
                          if isinstance(node, ast.FunctionDef) and node.name == "main"]
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) and node.module else [])
            found[module] += [f"{node.lineno}: imports {name}" for name in names if name in PARSERS]
            if isinstance(node, ast.Attribute) and node.attr == "argv" \
                    and isinstance(node.value, ast.Name) and node.value.id == "sys":
                found[module].append(f"{node.lineno}: sys.argv")
        found[module] += argv_parameters(module, tree)
    return {module: where for module, where in found.items() if where}


def test_only_commands_read_argv():
    """The library takes typed arguments; only `meditod_hub.commands` (and `cli`) parse a command
    line (issue 27: 19 library modules had a `main(argv)` parsing their flags; issue 47:
    models/recipes.py took `meditod train`'s argv and overrides)."""
    readers = argv_readers()
    assert not readers, "library modules reading a command line (move it to meditod_hub.commands):\n" \
        + "\n".join(f"{m}: {', '.join(w)}" for m, w in readers.items())


def test_the_argv_reader_sees_a_function_taking_argv():
    """The parameter check itself: a library function taking `overrides` or `argv` is seen, an
    exception is not, and every exception still names a function (a stale one hides nothing)."""
    tree = ast.parse("def check(path, config, overrides, types):\n    pass\n\n\n"
                     "async def paths(*, argv):\n    pass\n")
    assert argv_parameters("meditod_hub.models.x", tree) == ["1: def check(overrides)",
                                                             "5: def paths(argv)"]
    assert argv_parameters("meditod_hub.errors", ast.parse("def run_main(main, argv):\n    pass\n")) == []
    defined = {f"{_module_name(path)}.{node.name}" for path in PACKAGE.rglob("*.py")
               for node in ast.parse(path.read_text(encoding="utf-8")).body
               if isinstance(node, ast.FunctionDef)}
    assert set(ARGV_TAKERS) <= defined, f"ARGV_TAKERS names no function: {set(ARGV_TAKERS) - defined}"
