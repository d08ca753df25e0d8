"""Everything a task means is a field or method of its Task, in its module under
meditod_hub/data/tasks/ (issue 47, 1): no table outside data/tasks/ is keyed by a task, its
columns or its speaker, and a task's name is spelled outside data/tasks/ only where listed here,
each with its reason.

Read with `ast` from every module of meditod_hub outside data/tasks/, so docstrings and comments
never count. The task keys are the registry's: each task's name (in any case), its speaker, its
target and input columns. A key may be spelled as a string or as a module-level string constant
of the kit (`PATIENT_LABELS`, `release.DOCTOR_LABELS`). What counts:

* a table: a dict literal, a set literal or a `dict(...)` call whose keys are all task keys, two
  or more of them or bound to a name at module or class level (`BLOCKS = {"state": ...}`); or
  one whose keys include every speaker, or two task names, whatever else it holds. A row or a
  record holds other keys too (`{"id": ..., "nlu": ...}`, `{**row, "state": ...}`) and is none;
* a task-name literal: a string equal, in any case, to a task's name (display names included).

Not counted: comparisons (`speaker == "doctor"`), and tables built from the registry
(`{task.speaker: ... for task in TASKS.values()}`), whose knowledge stays in data/tasks/.
"""

from __future__ import annotations

import ast
from pathlib import Path

from meditod_hub.data.tasks import TASKS

PACKAGE = Path(__file__).resolve().parents[1] / "meditod_hub"
TASKS_PACKAGE = PACKAGE / "data" / "tasks"

# Tables keyed by a task key that remain outside data/tasks/: (module, enclosing function) -> why.
TABLES_LEFT: dict = {}
# Task-name literals left outside data/tasks/ (at most 3): (module, enclosing function, literal).
NAME_LITERALS_LEFT = {
    ("meditod_hub/data/release.py", "<module>", "nlu"):
        "the release format's key of a patient line's labels (PATIENT_LABELS), a data format "
        "the task's name comes from, not a reference to the task",
    ("meditod_hub/evaluation/nlg_accuracy.py", "<module>", "nlg"):
        "the held-out NLG check's own name, which names its files (nlg_<set>.json, "
        "eval/nlg/<set>) after the task it checks",
}


def _task_keys() -> tuple[set[str], set[str], set[str]]:
    names = {task.name.lower() for task in TASKS.values()}
    speakers = {task.speaker for task in TASKS.values()}
    columns = {task.target_column for task in TASKS.values()} | {
        task.input_column for task in TASKS.values() if task.input_column}
    return names, speakers, columns


def _module_constants(trees) -> dict[str, str]:
    """Module-level string constants of the kit (`NAME = "x"`, `A, B = "x", "y"`), by name;
    a name bound to two values in two modules is left out."""
    seen: dict[str, set[str]] = {}
    for tree in trees:
        for node in tree.body:
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                pairs = [(target, node.value)]
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs = list(zip(target.elts, node.value.elts))
                for name, value in pairs:
                    if (isinstance(name, ast.Name) and isinstance(value, ast.Constant)
                            and isinstance(value.value, str)):
                        seen.setdefault(name.id, set()).add(value.value)
    return {name: next(iter(values)) for name, values in seen.items() if len(values) == 1}


def _key(node, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(
        node, ast.Attribute) else None
    return constants.get(name) if name else None


def _keys(node) -> list | None:
    """The key nodes of a dict / set literal or a `dict(...)` call (None: not one)."""
    if isinstance(node, ast.Dict):
        return node.keys
    if isinstance(node, ast.Set):
        return node.elts
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return [ast.Constant(k.arg) for k in node.keywords] + [None] * len(node.args)
    return None


def _scopes(tree: ast.AST):
    """(node, enclosing function name or <module>, bound at module or class level) of every
    node."""
    def walk(node, scope: str, top: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield child, scope, False
                yield from walk(child, child.name, False)
                continue
            bound = top and isinstance(node, (ast.Module, ast.ClassDef, ast.Assign, ast.AnnAssign))
            yield child, scope, bound
            yield from walk(child, scope, bound or (top and isinstance(child, ast.ClassDef)))
    yield from walk(tree, "<module>", True)


def keyed_tables(tree: ast.AST, constants: dict[str, str]) -> list[tuple[int, str]]:
    """(line, enclosing function) of every table keyed by a task key (module docstring)."""
    names, speakers, columns = _task_keys()
    found = []
    for node, scope, bound in _scopes(tree):
        key_nodes = _keys(node)
        if not key_nodes:
            continue
        keys = [None if k is None else _key(k, constants) for k in key_nodes]
        folded = [k.lower() if k and k.lower() in names else k for k in keys]
        task_keys = [k for k in folded if k in names | speakers | columns]
        only_task_keys = len(task_keys) == len(keys) and (len(keys) >= 2 or bound)
        if only_task_keys or speakers <= set(folded) or len(names & set(folded)) >= 2:
            found.append((node.lineno, scope))
    return found


def name_literals(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, enclosing function, literal) of every string equal, in any case, to a task's
    name; docstrings are no code."""
    names, _, _ = _task_keys()
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, scope, node.value) for node, scope, _ in _scopes(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.lower() in names and id(node) not in docstrings]


def _modules() -> dict[str, ast.Module]:
    return {path.relative_to(PACKAGE.parent).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
            for path in sorted(PACKAGE.rglob("*.py"))}


def _outside_tasks(modules: dict[str, ast.Module]) -> dict[str, ast.Module]:
    inside = TASKS_PACKAGE.relative_to(PACKAGE.parent).as_posix() + "/"
    return {path: tree for path, tree in modules.items() if not path.startswith(inside)}


def test_no_table_outside_data_tasks_is_keyed_by_a_task_its_column_or_its_speaker():
    modules = _modules()
    constants = _module_constants(modules.values())
    found = {(path, scope) for path, tree in _outside_tasks(modules).items()
             for _, scope in keyed_tables(tree, constants)}
    assert found == set(TABLES_LEFT), "a task's knowledge belongs in its module under data/tasks/"


def test_a_task_s_name_is_spelled_outside_data_tasks_only_where_listed():
    found = {(path, scope, literal) for path, tree in _outside_tasks(_modules()).items()
             for _, scope, literal in name_literals(tree)}
    assert found == set(NAME_LITERALS_LEFT), "read the registry (TASKS, task.name, display_name)"
    assert len(NAME_LITERALS_LEFT) <= 3


SYNTHETIC = '''
"""A module naming nlu, pol and nlg in its docstring only."""
BLOCKS = {"state": "[dialog state]", "actions": "[action]"}
VIEWS = {PATIENT_LABELS: 1}
BY_SPEAKER = dict(patient=1, doctor=2)
SEEN = {"nlu", "POL"}


class Format:
    INPUTS = {release.DOCTOR_LABELS: "actions:"}


def rows(row):
    """nlu"""
    record = {"id": 1, "actions": [], "state": {}}
    single = {"actions": []}
    update = {**row, "state": 1}
    mixed = {"patient": 1, "doctor": 2, "other": 3}
    return record, single, update, mixed, "NLG", f"{row} nlu", "nlu-ish"
'''


def test_the_counters_see_keyed_tables_and_name_literals():
    tree = ast.parse(SYNTHETIC)
    constants = {"PATIENT_LABELS": "nlu", "DOCTOR_LABELS": "actions"}
    assert keyed_tables(tree, constants) == [
        (3, "<module>"), (4, "<module>"), (5, "<module>"), (6, "<module>"), (10, "<module>"),
        (18, "rows")]
    assert [(line, literal) for line, _, literal in name_literals(tree)] == [
        (6, "nlu"), (6, "POL"), (19, "NLG")]


def test_the_constants_reader_resolves_the_kit_s_label_keys():
    constants = _module_constants(_modules().values())
    assert constants["PATIENT_LABELS"] == TASKS["nlu"].target_column
    assert constants["DOCTOR_LABELS"] == TASKS["pol"].target_column
