"""matplotlib for the ``--png`` pictures: an optional extra, imported only when drawing.

The commands print the same figures as text, so a missing matplotlib costs only the
picture; asking for one without it is a configuration error that names the extra.
"""

from __future__ import annotations

from typing import Any

from scrapy_simhash.exceptions import ConfigurationError

INSTALL_HINT = 'pip install "scrapy-simhash[plot]"'


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the file-only Agg backend (no display needed)."""
    try:
        import matplotlib
    except ImportError:
        raise ConfigurationError(
            f"--png needs matplotlib, which is not installed: {INSTALL_HINT}"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(figure: Any, path: str) -> None:
    """Write ``figure`` as PNG and free it; an unwritable path is a clear error."""
    plt = pyplot()
    try:
        figure.savefig(path, format="png", dpi=110)
    except OSError as exc:
        raise ConfigurationError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(figure)
