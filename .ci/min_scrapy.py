#!/usr/bin/env python3
"""Run the crawl tests against the oldest Scrapy that setup.cfg declares (``Scrapy>=X``).

The declared minimum must be true: older Scrapy releases lack APIs the add-on uses and fail
in ways that hide our own errors. This builds a plain virtualenv (no system packages, so
the newer Scrapy installed for the main suite cannot leak in) with exactly that Scrapy,
kept in a cache directory between runs, and runs the crawl tests there against this
checkout. Usage: ``python3 .ci/min_scrapy.py`` from anywhere.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = [
    "tests/crawl/test_scrapy_crawl.py",
    "tests/crawl/test_recrawl_crawl.py",
    "tests/crawl/test_crawl_failures.py",
    "tests/crawl/test_scrapy_follow.py",
    "tests/crawl/test_dust_crawl.py",
]
TEST_DEPS = [
    "pytest>=8",
    "pytest-twisted>=1.14",
    "pytest-timeout>=2.3",
    "hypothesis>=6.100",
    "rjieba>=0.2",
]
#: Scrapy 2.13 predates Twisted 26, which removed a private API it imports: an environment
#: that pins the old Scrapy runs the Twisted of its time.
ERA = ["Twisted==25.5.0"]


def minimum_scrapy() -> str:
    match = re.search(r"^\s*Scrapy>=([0-9.]+)\s*$", (REPO / "setup.cfg").read_text(), re.MULTILINE)
    if match is None:
        sys.exit("setup.cfg declares no 'Scrapy>=X' requirement")
    return match.group(1)


def requirements() -> str:
    """The install_requires block of setup.cfg (the environment is built once per block)."""
    match = re.search(
        r"^install_requires =\n((?:[ \t]+\S.*\n)+)", (REPO / "setup.cfg").read_text(), re.MULTILINE
    )
    return match.group(1) if match else ""


def main() -> int:
    version = minimum_scrapy()
    ready = f"{version}\n{requirements()}\n{' '.join(TEST_DEPS)}"
    tag = hashlib.sha256(ready.encode()).hexdigest()[:8]  # new dependencies: a new environment
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    env_dir = cache / "scrapy-simhash" / f"venv-scrapy-{version}-{tag}"
    python = env_dir / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    marker = env_dir / ".ready"
    if not marker.exists() or marker.read_text() != ready:
        venv.EnvBuilder(clear=True, with_pip=True).create(env_dir)
        subprocess.run([*pip, f"Scrapy=={version}", *ERA, *TEST_DEPS, str(REPO)], check=True)
        marker.write_text(ready)
    else:  # the package itself may have changed (its entry points register 'scrapy simhash')
        subprocess.run([*pip, "--no-deps", "--force-reinstall", str(REPO)], check=True)
    found = subprocess.run(
        [str(python), "-c", "import scrapy; print(scrapy.__version__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if found != version:
        sys.exit(f"the minimum-Scrapy environment has Scrapy {found}, not {version}")
    print(f"crawl tests with Scrapy {version} (the declared minimum)", flush=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # -m "": every test of these files, Redis ones too (setup.cfg's default leaves them out).
    command = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "", *TESTS]
    return subprocess.run(command, cwd=REPO, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
