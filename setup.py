"""Builds the compiled walk and read-out (``scrapy_simhash/text/_compiled.pyx``) and the
compiled hashing (``scrapy_simhash/_hashes.pyx``, over the vendored xxhash header) when it can.

Everything else is in setup.cfg. The walk is an option, not a requirement: without a C
compiler the build says why and goes on, and the package runs its interpreted walk, which
gives the same fingerprints more slowly (the crawl says so once when it starts).
"""

from __future__ import annotations

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError, LinkError, PlatformError

#: What a machine without a working C compiler raises while building.
_NO_COMPILER = (CCompilerError, CompileError, ExecError, LinkError, PlatformError, OSError)


class OptionalBuildExt(build_ext):
    """build_ext that reports a failed compile instead of failing the install, and leaves
    what it could not build out of the install."""

    def run(self) -> None:
        try:
            super().run()
        except _NO_COMPILER as exc:  # no compiler at all: the interpreted path is complete
            _not_built(exc)

    def build_extensions(self) -> None:
        self.check_extensions_list(self.extensions)
        built = []
        for ext in self.extensions:
            try:
                self.build_extension(ext)
            except _NO_COMPILER as exc:
                _not_built(exc)
            else:
                built.append(ext)
        self.extensions = built


def _not_built(reason: BaseException) -> None:
    print(
        f"scrapy-simhash: the compiled extraction was not built ({reason}); the package "
        "works without it, more slowly. Install a C compiler and reinstall to build it."
    )


def extensions() -> list[Extension]:
    try:
        from Cython.Build import cythonize
    except ImportError as exc:  # a build without its build requirements
        _not_built(exc)
        return []
    walk = Extension("scrapy_simhash.text._compiled", ["scrapy_simhash/text/_compiled.pyx"])
    hashes = Extension(
        "scrapy_simhash._hashes",
        ["scrapy_simhash/_hashes.pyx"],
        include_dirs=["scrapy_simhash/_vendor/xxhash"],
        depends=["scrapy_simhash/_vendor/xxhash/xxhash.h"],
    )
    try:
        return list(cythonize([walk, hashes], quiet=True))
    except Exception as exc:  # noqa: BLE001 - a Cython error must not stop the install
        _not_built(exc)
        return []


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
