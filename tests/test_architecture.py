"""The dependency direction holds (import-linter contracts in pyproject.toml), the project's modules import
each other without a cycle, no import hides in a function body unless a `why:` comment says why, and no product
module runs past 600 lines unless its top says why it is one module."""

import ast
import os
from pathlib import Path

import grimp
from importlinter.cli import lint_imports

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "accounts",
    "alerts",
    "api",
    "assistants",
    "audits",
    "config",
    "crawler",
    "dashboard",
    "scratchpad",
    "webhooks",
)
WHY_MARKER = "why:"


def test_import_contracts_are_kept():
    cwd = os.getcwd()
    os.chdir(REPO_ROOT)  # lint-imports reads pyproject.toml from the working directory
    try:
        assert lint_imports(no_cache=True, no_logo=True) == 0  # the contracts it printed say which broke
    finally:
        os.chdir(cwd)


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
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
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_among_the_projects_modules():
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    assert _cycles(graph) == []


def _function_body_imports():
    for package in PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            lines = path.read_text().splitlines()
            for node in ast.walk(ast.parse("\n".join(lines), filename=str(path))):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Import | ast.ImportFrom):
                        line = lines[sub.lineno - 1]
                        above = lines[sub.lineno - 2].strip() if sub.lineno > 1 else ""
                        explained = WHY_MARKER in line.partition("#")[2] or (
                            above.startswith("#") and WHY_MARKER in above
                        )
                        yield path.relative_to(REPO_ROOT), sub.lineno, line.strip(), explained


def test_no_function_body_import_without_a_why_comment():
    unexplained = [f"{path}:{lineno}: {text}" for path, lineno, text, ok in _function_body_imports() if not ok]
    assert unexplained == [], "import at the top of the module, or say why not with a `# why: ...` comment"


MODULE_LINES_MAX = 600  # issue 26: past this, a module says at its top why it is one module
LONG_MODULE_MARKER = "Why one module of over 600 lines"
NOT_PRODUCT = {".venv", "tests", "migrations", "node_modules"}


def _long_modules_without_a_reason():
    for path in sorted(REPO_ROOT.rglob("*.py")):
        if NOT_PRODUCT & set(path.relative_to(REPO_ROOT).parts):
            continue
        lines = path.read_text().splitlines()
        if len(lines) <= MODULE_LINES_MAX:
            continue
        first_import = next((i for i, line in enumerate(lines) if line.startswith(("import ", "from "))), len(lines))
        if LONG_MODULE_MARKER not in "\n".join(lines[:first_import]):
            yield f"{path.relative_to(REPO_ROOT)}: {len(lines)} lines"


def test_a_module_over_600_lines_says_why_at_its_top():
    unexplained = list(_long_modules_without_a_reason())
    assert unexplained == [], f"split it, or say above its imports: “{LONG_MODULE_MARKER}: …”"
