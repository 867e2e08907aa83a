"""The tree stays readable: no two project modules import each other (type-only imports count too:
they are the same knot for a reader), each room imports only the rooms below it (LAYERS), host scripts
that read (probes) and that change (actions) stand apart, and no function outside the tests is longer than
a reader takes in at once (MAX_FUNCTION_LINES; a module is as long as its concern needs)."""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).parents[2]
PACKAGES = (
    "bench", "config", "deploy", "facts", "inventories", "planner", "remote", "reports", "run", "tasks", "testbed",
    "tests",
)  # fmt: skip
# Each room and the rooms it may import (README's Layout): config <- facts, run <- planner <- reports <- tasks <-
# deploy;
# remote (the host scripts' shared pieces and their command builder) is below them all. A concern's rules
# (tasks/<concern>/ RULES) are the planner's room, its operations the tasks'.
LAYERS = {
    "remote": set(),
    "config": {"remote"},
    "facts": {"remote", "config"},
    "run": {"remote", "config"},
    "planner": {"remote", "config", "facts", "run"},
    "reports": {"remote", "config", "facts", "run", "planner"},
    "tasks": {"remote", "config", "facts", "run", "planner", "reports"},
    "deploy": {"remote", "config", "facts", "run", "planner", "reports", "tasks"},
}
# A function read at once (developers' guide: ~80 lines), its nested functions and classes counted in it.
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    """Dotted name -> file, for every Python module of the project's packages."""
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports, anywhere in it (under TYPE_CHECKING and in functions too)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                deps |= {alias.name for alias in node.names if alias.name in modules}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    deps |= {full} if full in modules else ({node.module} if node.module in modules else set())
        graph[name] = deps - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return found


def test_the_cycle_finder_finds_a_knot_and_passes_a_chain() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_two_modules_import_each_other() -> None:
    assert cycles(import_graph(_modules())) == []


def long_functions(source: str) -> dict[str, int]:
    """Each function (or method) of source longer than MAX_FUNCTION_LINES, by name: its lines, decorators
    and docstring included."""
    long = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if (lines := (node.end_lineno or node.lineno) - first + 1) > MAX_FUNCTION_LINES:
                long[node.name] = lines
    return long


def test_the_length_check_names_a_long_function_and_passes_a_short_one() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    assert long_functions(f"def long():\n{body}\ndef short():\n    return 1\n") == {"long": MAX_FUNCTION_LINES + 1}
    assert long_functions(f"def fits():\n{body[: -len(body.splitlines(True)[-1])]}") == {}


def test_no_function_outside_the_tests_is_longer_than_a_reader_takes_in_at_once() -> None:
    long = {
        f"{path.relative_to(REPO)}: {function}": lines
        for name, path in _modules().items()
        if not name.startswith("tests")
        for function, lines in long_functions(path.read_text()).items()
    }
    assert long == {}, f"cut these at their natural seams: {long}"


def concern_rules() -> set[str]:
    """The rules modules of each concern folder (tasks/<concern>/__init__.py's RULES): the planner's room."""
    found = set()
    for init in (REPO / "tasks").glob("*/__init__.py"):
        for node in ast.parse(init.read_text()).body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["RULES"]:
                found |= {f"tasks.{init.parent.name}.{name}" for name in ast.literal_eval(node.value)}
    return found


def room_of(name: str, rules: set[str]) -> str:
    """A module's room: its top folder; a concern folder's rules are the planner's, its operations
    the tasks'. So the planner reads a concern's rules, a concern's rules never read its operations."""
    return "planner" if name in rules else name.split(".")[0]


def layer_breaches(graph: dict[str, set[str]], rules: set[str] | None = None) -> list[str]:
    """Imports of a room from a room it may not import (LAYERS), as "module -> module"."""
    rules = concern_rules() if rules is None else rules
    room = lambda name: room_of(name, rules)  # noqa: E731
    return sorted(
        f"{module} -> {dep}"
        for module, deps in graph.items()
        if room(module) in LAYERS
        for dep in deps
        if room(dep) in LAYERS and room(dep) != room(module) and room(dep) not in LAYERS[room(module)]
    )


def test_the_layer_check_names_a_room_importing_one_above_it() -> None:
    assert layer_breaches({"planner.offline": {"tasks.wheelhouse", "facts.apt"}}) == [
        "planner.offline -> tasks.wheelhouse"
    ]
    assert layer_breaches({"tasks.switch": {"planner.installed", "run.host_log"}}) == []


def test_a_concern_s_rules_are_read_by_the_planner_and_never_read_its_operations() -> None:
    rules = {"tasks.venv.plan", "tasks.venv.state"}
    assert layer_breaches({"planner.rules": {"tasks.venv.plan"}, "tasks.venv.plan": {"planner.tables"}}, rules) == []
    assert layer_breaches({"planner.offline": {"tasks.venv.wheelhouse"}}, rules) == [
        "planner.offline -> tasks.venv.wheelhouse"
    ]
    assert layer_breaches({"tasks.venv.state": {"tasks.venv.operations"}}, rules) == [
        "tasks.venv.state -> tasks.venv.operations"
    ]
    assert {"tasks.venv.plan", "tasks.venv.state", "tasks.venv.lock_digests"} <= concern_rules()


def test_each_room_imports_only_the_rooms_below_it() -> None:
    assert layer_breaches(import_graph(_modules())) == []


def test_probes_are_run_by_facts_and_actions_by_operations() -> None:
    """remote/probes/ holds what facts run (they change nothing), remote/actions/ what operations run:
    a probe named outside facts/, or an action inside, is in the wrong folder."""
    import remote

    def naming(folder: str) -> dict[str, set[str]]:
        texts = {path: path.read_text() for path in (REPO / folder).rglob("*.py")}
        return {
            script.name: {str(path.relative_to(REPO)) for path, text in texts.items() if f'"{script.name}"' in text}
            for script in remote.scripts()
        }

    by_facts, by_tasks = naming("facts"), naming("tasks")
    names = [script.name for script in remote.scripts()]
    assert len(names) == len(set(names)), "a script name stands in two folders: remote.source() finds one"
    for script in remote.scripts():
        folder = script.parent.name
        if folder == "probes":
            assert by_facts[script.name] and not by_tasks[script.name], script.name
        elif folder in ("actions", "scripts"):  # scripts: a concern's own, beside its operations
            assert not by_facts[script.name], script.name
