"""The paste page's Python (run by Pyodide in the browser): the page calls `answer(path)` on the report it
wrote into its virtual file system, and shows the JSON it returns (harness/answer/page.py).

The harness is the single-file diagnoser the page serves beside itself (refenv-diagnose.pyz), imported
from the archive as any Python imports a zip on its path.
"""

import sys

sys.path.insert(0, "/refenv/refenv-diagnose.pyz")

from harness.answer.page import answer
from harness.launcher import version_line

VERSION = version_line()

__all__ = ["VERSION", "answer"]
