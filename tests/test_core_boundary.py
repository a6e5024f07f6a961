"""The pure core never imports Scrapy: it must stay usable (and cheap) without a crawler."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import scrapy_simhash

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
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_package_exports_scrapy_components_lazily() -> None:
    code = (
        "import sys, scrapy_simhash\n"
        "before = 'scrapy' in sys.modules\n"
        "addon = scrapy_simhash.Addon\n"
        "print(before, addon.__module__, 'scrapy' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
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
            isinstance(node, ast.Constant) and isinstance(node.value, str)
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
