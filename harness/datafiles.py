"""The harness's data files (harness/data/*.json) as text, wherever the harness was imported from.

Read through the package's loader (`pkgutil.get_data`), not a path beside `__file__`: the same code then
reads them from a folder, from the single-file diagnoser (a zip archive run by `zipimport`) and from the
paste page's virtual file system in the browser.
"""

from __future__ import annotations

import pkgutil


def read(name: str) -> str:
    """The text of harness/data/NAME; OSError when it is missing."""
    data = pkgutil.get_data("harness", f"data/{name}")
    if data is None:  # a loader that cannot read resources at all
        raise OSError(f"harness/data/{name}: the harness's loader cannot read its data files")
    return data.decode("utf-8")
