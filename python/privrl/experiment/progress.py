"""Progress bars of the harness (runs, learn loops, sweeps): shown in a terminal or a notebook, never in
a pipe or a log file; a run's bar appears only once it has taken ~2 s."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = ["interactive", "bar", "checked_progress", "tqdm_class"]


def interactive() -> bool:
    """True in a terminal session or a Jupyter / IPython kernel (where progress bars help)."""
    return bool(getattr(sys.stderr, "isatty", lambda: False)()) or "ipykernel" in sys.modules


def checked_progress(progress: Any) -> bool | None:
    """`progress` as given when it is True, False or None (None: the caller asks interactive())."""
    if progress is not None and not isinstance(progress, (bool, np.bool_)):  # "no" showed the bar
        raise TypeError(f"progress must be True, False or None, got {progress!r}")
    return None if progress is None else bool(progress)


def tqdm_class() -> Any:
    """tqdm.auto's bar class: the notebook widget in a Jupyter kernel with ipywidgets, the text bar
    elsewhere. Without ipywidgets tqdm.auto falls back to the text bar by itself but first warns
    "IProgress not found. Please update jupyter and ipywidgets" on every first import: a bar needs
    no widget, so that warning is silenced here."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        from tqdm.auto import tqdm  # type: ignore[import-untyped, unused-ignore]
    return tqdm


def bar(total: int, desc: str, progress: bool | None, unit: str = "user") -> Any:
    """A tqdm bar of ``total`` steps shown after 2 s (``progress=None``: when interactive), or None."""
    progress = checked_progress(progress)
    if not (interactive() if progress is None else progress):
        return None
    return tqdm_class()(
        total=total, desc=desc, unit=unit, delay=2.0, file=sys.stderr, dynamic_ncols=True, leave=False
    )
