"""The pure core never imports Scrapy: it must stay usable (and cheap) without a crawler."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import scrapy_simhash

REPO = Path(__file__).resolve().parents[2]


def _python(code: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter (in ``cwd``, the repository importable)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


#: The Scrapy glue layer (with the package ``scrapy_simhash.glue``); every other module is
#: the pure core.
GLUE = {"scrapy_simhash.signals"}


def core_modules() -> list[str]:
    names = [
        info.name
        for info in pkgutil.walk_packages(scrapy_simhash.__path__, "scrapy_simhash.")
        if info.name not in GLUE
        and not info.name.startswith("scrapy_simhash.glue")
        and info.name != "scrapy_simhash.__main__"
    ]
    return sorted(names)


def test_core_modules_import_without_scrapy() -> None:
    modules = core_modules()
    assert {
        "scrapy_simhash.dust",
        "scrapy_simhash.fingerprint",
        "scrapy_simhash.index",
        "scrapy_simhash.recrawl",
        "scrapy_simhash.text",
        "scrapy_simhash.text.decode",
        "scrapy_simhash.text.extract",
    } <= set(modules)
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'scrapy', 'twisted'}))\n"
    )
    result = _python(code)
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_package_exports_scrapy_components_lazily() -> None:
    code = (
        "import sys, scrapy_simhash\n"
        "before = 'scrapy' in sys.modules\n"
        "addon = scrapy_simhash.Addon\n"
        "print(before, addon.__module__, 'scrapy' in sys.modules)\n"
    )
    result = _python(code)
    assert result.stdout.split() == ["False", "scrapy_simhash.glue.addon", "True"]


def test_settings_are_read_in_the_settings_package_only() -> None:
    """A setting read elsewhere would have a second default, or a second meaning of a
    malformed value: every call naming a ``SIMHASH_*`` setting is in scrapy_simhash.settings."""
    import ast
    import re
    from pathlib import Path

    root = Path(scrapy_simhash.__file__).parent
    name = re.compile(r"SIMHASH_[A-Z0-9_]+")

    def is_name(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and name.fullmatch(node.value) is not None
        )

    def names_a_setting(node: ast.AST) -> bool:
        """A call with a setting's name as an argument, or ``settings["SIMHASH_X"]``."""
        if isinstance(node, ast.Call):
            return any(map(is_name, [*node.args, *(k.value for k in node.keywords)]))
        return isinstance(node, ast.Subscript) and is_name(node.slice)

    readers = [
        f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
        for path in sorted(root.rglob("*.py"))
        if path.parent != root / "settings"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if names_a_setting(node)
    ]
    assert readers == []


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, anywhere in it (inside functions too;
    not under ``if TYPE_CHECKING``). ``from p import m`` names module ``p.m`` when ``m`` is
    one (``p`` itself only for other names); a parent package is not counted, as every
    import of a submodule runs it."""
    import ast
    from pathlib import Path

    root = Path(scrapy_simhash.__file__).parent
    files = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        files[name] = path
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        hidden = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for inner in ast.walk(node)
        }
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in hidden:
                continue
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                subs = [
                    f"{base}.{alias.name}"
                    for alias in node.names
                    if f"{base}.{alias.name}" in files
                ]
                found.update(subs)
                if len(subs) < len(node.names):
                    found.add(base)
        graph[name] = {module for module in found if module in files and module != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_package_has_no_import_cycle() -> None:
    """Settings on top of the core, the storage registry on top of its backends: a module
    that imports its own callers can be neither read nor replaced alone."""
    graph = _import_graph()
    assert graph["scrapy_simhash.storage"] >= {"scrapy_simhash.index.sqlite"}  # it sees imports
    cycles = _cycles(graph)
    described = [
        " ; ".join(f"{m} -> {sorted(graph[m] & set(cycle))}" for m in cycle) for cycle in cycles
    ]
    assert cycles == [], described


def test_the_cycle_finder_finds_a_cycle_through_a_function_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _core_strings() -> list[tuple[str, int, str]]:
    """(module, line, text) of every string constant in a core module, docstrings and
    messages included: everything but ``settings/``, ``glue/``, ``cli/`` and ``reset``."""
    import ast
    from pathlib import Path

    root = Path(scrapy_simhash.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(("settings/", "glue/", "cli/")) or relative in (
            "reset.py",
            "__main__.py",
            "signals.py",
        ):
            continue
        found.extend(
            (relative, node.lineno, node.value)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        )
    return found


def test_the_core_knows_no_setting_name() -> None:
    """The core takes typed options and speaks of them; ``settings/`` alone knows which
    ``SIMHASH_*`` setting sets each, and says so in the messages users read."""
    import re

    named = [(m, line) for m, line, text in _core_strings() if re.search(r"SIMHASH_[A-Z]", text)]
    assert named == []


def test_every_option_the_core_names_has_its_setting() -> None:
    """Each `option` an error of the core names is put in setting names for the user."""
    import ast
    import re
    from pathlib import Path

    from scrapy_simhash.settings import KNOWN_SETTINGS
    from scrapy_simhash.settings.names import OPTION_SETTINGS, in_setting_names

    assert set(OPTION_SETTINGS.values()) <= KNOWN_SETTINGS
    root = Path(scrapy_simhash.__file__).parent
    core = {module for module, _, _ in _core_strings()}
    options: set[str] = set()
    for module in core:
        for node in ast.walk(ast.parse((root / module).read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Raise, ast.Call)) and (
                isinstance(node, ast.Raise) or getattr(node.func, "id", "").endswith("Error")
            ):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                        options.update(re.findall(r"`([a-z_]+)`", inner.value))
    assert options - set(OPTION_SETTINGS) == set()
    assert {"bits", "url", "shards", "policy", "tokenizer"} <= options
    said = in_setting_names("`bits` must be 64 or 128; run `scrapy simhash reset --namespace n`")
    assert said == "SIMHASH_BITS must be 64 or 128; run `scrapy simhash reset --namespace n`"


def test_settings_are_imported_by_the_glue_the_command_line_and_reset_only() -> None:
    graph = _import_graph()
    readers = {
        module
        for module, imported in graph.items()
        if any(
            m == "scrapy_simhash.settings" or m.startswith("scrapy_simhash.settings.")
            for m in imported
        )
    }
    assert readers, "the graph sees the settings package's readers"
    outside = {
        m
        for m in readers
        if not m.startswith(
            ("scrapy_simhash.settings", "scrapy_simhash.glue.", "scrapy_simhash.cli")
        )
        and m != "scrapy_simhash.reset"
    }
    assert outside == set()


def test_a_crawl_on_the_embedded_default_loads_no_redis_pydantic_or_numpy(tmp_path: Path) -> None:
    """Each costs every crawl's start (0.3 s of CPU together) and its objects every full
    garbage collection: redis with no Redis URL, pydantic through itemadapter with no item
    fields to compare, numpy on the compiled path. The add-on configures a crawl, and a
    page and its copy go through the downloader middleware on the embedded SQLite file,
    the template memory on."""
    code = (
        "import sys\n"
        "from scrapy.settings import Settings\n"
        "from scrapy_simhash import Addon\n"
        "from tests.scrapy_inprocess import HARBOUR, harness, story\n"
        "Addon().update_settings(Settings())\n"
        "with harness(SIMHASH_INDEX_URL=None) as h:\n"
        "    h.fetch('https://a.test/1', story(HARBOUR))\n"
        "    dropped, _ = h.fetch('https://a.test/1?print=1', story(HARBOUR))\n"
        "    print(type(dropped).__name__)\n"
        "print(sorted(m for m in ('redis', 'pydantic', 'itemadapter', 'numpy') if m in sys.modules))\n"
    )
    result = _python(code, cwd=tmp_path)
    assert result.stdout.split("\n")[-3:-1] == ["NearDuplicate", "[]"]


def test_redis_errors_are_outages_once_redis_is_loaded() -> None:
    code = (
        "from scrapy_simhash.glue.guard import backend_errors\n"
        "before = [e.__name__ for e in backend_errors()]\n"
        "import redis\n"
        "print('RedisError' in before, redis.RedisError in backend_errors())\n"
    )
    result = _python(code)
    assert result.stdout.split() == ["False", "True"]
