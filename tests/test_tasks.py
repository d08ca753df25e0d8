"""The task modules (`meditod_hub.data.tasks`, one per task) own what a task means: no other
module branches on a task's name, and a label's shape is read from the task."""

import ast
from pathlib import Path

import pytest

from meditod_hub.data.tasks import TASK_NAMES, get_task

PACKAGE = Path(__file__).resolve().parents[1] / "meditod_hub"
TASK_MODULES = PACKAGE / "data" / "tasks"


def _names_a_task(node: ast.expr) -> bool:
    """`task`, `self.task`, `args.task`, `results["task"]`: an expression that holds a task name."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value == "task"
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
    return name == "task" or name.endswith("_task")


def _task_literal(node: ast.expr) -> bool:
    literals = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return any(isinstance(n, ast.Constant) and n.value in TASK_NAMES for n in literals)


def test_no_module_outside_the_task_modules_branches_on_a_task_name():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if TASK_MODULES in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            if any(map(_names_a_task, sides)) and any(map(_task_literal, sides)):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not found, ("these compare a task with a task's name; ask the task instead "
                       f"(its columns, structured, item_slots): {found}")


def _task_lookups(tree: ast.AST):
    """(line, what) of every registry lookup by a task-name literal (`TASKS["nlu"]`,
    `get_task("pol")`) and every table keyed by two or more task names (`{"nlu": ..., "pol": ...}`):
    what a task's own field or a loop over the tasks says instead (issue 37)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _task_literal(node.slice) \
                and isinstance(node.value, ast.Name) and node.value.id.endswith("TASKS"):
            yield node.lineno, "a registry lookup by a task's name"
        elif isinstance(node, ast.Call) and node.args and _task_literal(node.args[0]) \
                and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("get_task", "as_task"):
            yield node.lineno, "a registry lookup by a task's name"
        elif isinstance(node, ast.Dict) and len({k.value for k in node.keys if isinstance(
                k, ast.Constant) and k.value in TASK_NAMES}) >= 2:
            yield node.lineno, "a table keyed by task names"


def test_no_module_outside_the_task_modules_looks_a_task_up_by_its_name():
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
             for path in sorted(PACKAGE.rglob("*.py")) if TASK_MODULES not in path.parents
             for line, what in _task_lookups(ast.parse(path.read_text(encoding="utf-8")))]
    assert not found, "read the task's field or loop over tasks.TASKS instead:\n" + "\n".join(found)


def test_task_names_are_spelled_in_the_task_modules():
    """Outside data/tasks/ a task's name is almost never written: the modules take a Task and
    read its fields (issue 37: 112 such literals in 21 files before, at most 5 now; the one left
    is the release's own label key, `release.PATIENT_LABELS`)."""
    found = [f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
             for path in sorted(PACKAGE.rglob("*.py")) if TASK_MODULES not in path.parents
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Constant) and node.value in TASK_NAMES]
    print(f"task-name literals outside data/tasks/: {len(found)}: {found}")
    assert len(found) <= 5, f"{len(found)} task-name literals outside data/tasks/: {found}"


def test_the_lookup_guard_sees_what_it_forbids():
    for source in ('TASKS["nlu"].headline', 'get_task("pol")', 'tasks.as_task("nlg")',
                   '{"nlu": "a", "pol": "b"}', 'CASCADED_TASKS["pol"]'):
        assert list(_task_lookups(ast.parse(source))), source
    for source in ('row["nlu"]', '{"nlu": items}', 'get_task(name)'):  # a release's `nlu` key
        assert not list(_task_lookups(ast.parse(source))), source


def test_the_task_holds_per_task_behaviour_as_fields_not_branches_on_its_name():
    """Task.score and Task.cascade_rows call the task's own functions (`scorer`,
    `cascade_builder`): data/tasks/ never compares `self.name` nor looks a table up by it."""
    trees = [(path, ast.parse(path.read_text(encoding="utf-8")))
             for path in sorted(TASK_MODULES.glob("*.py"))]

    def is_self_name(node):
        return (isinstance(node, ast.Attribute) and node.attr == "name"
                and isinstance(node.value, ast.Name) and node.value.id == "self")

    found = [f"{path.name}:{node.lineno}" for path, tree in trees for node in ast.walk(tree)
             if (isinstance(node, ast.Compare) and any(map(is_self_name, [node.left, *node.comparators])))
             or (isinstance(node, ast.Subscript) and is_self_name(node.slice))]
    assert len(trees) >= 5, "data/tasks/ holds no task modules"
    assert not found, f"data/tasks/ branches on self.name at {found}"
    assert all(callable(get_task(name).scorer) for name in TASK_NAMES)
    assert [name for name in TASK_NAMES if get_task(name).cascade_builder] == \
        [name for name in TASK_NAMES if get_task(name).upstream]


def test_the_guard_sees_the_branches_it_forbids():
    """The check above would catch each way the old code spelled a task branch."""
    for source in ('task == "nlu"', 'self.task != "nlg"', 'args.task in ("nlu", "pol")',
                   'results["task"] == "nlg"', '"pol" == first_task'):
        compare = ast.parse(source, mode="eval").body
        sides = [compare.left, *compare.comparators]
        assert any(map(_names_a_task, sides)) and any(map(_task_literal, sides)), source


@pytest.mark.parametrize("task, item, slots", [
    ("nlu", {"intent": "inform", "slots": {"positive_symptom": [{"value": "cough"}]}},
     {"positive_symptom": [{"value": "cough"}]}),
    ("nlu", {"intent": "chit-chat"}, {}),
    ("nlu", {"intent": "inform", "slots": "broken"}, {}),
    ("pol", {"action": "inquire", "symptom": [{"value": "fever"}]},
     {"symptom": [{"value": "fever"}]}),
    ("pol", {"action": "other"}, {}),
])
def test_a_label_item_s_slots_come_from_its_task(task, item, slots):
    assert get_task(task).item_slots(item) == slots
