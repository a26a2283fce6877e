"""The README is a door and the manual a site: the generated reference says what the parsers say, every page is
reachable, every link of the README lands on a page, and the site builds strictly."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from refenv import reference

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_pages(item)]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    return []


def test_the_reference_page_is_what_the_parsers_say() -> None:
    """docs/reference.md is generated (`invoke docs`): a flag added, renamed or reworded without it fails here."""
    written = (ROOT / reference.PAGE).read_text(encoding="utf-8")
    assert written == reference.page(), "docs/reference.md is stale: run `invoke docs`"


def test_the_reference_names_every_command_task_and_verdict() -> None:
    from harness.commands import COMMANDS
    from harness.schema import TABLE

    page = reference.page()
    assert all(f"### `python -m harness {name}`" in page for name in COMMANDS)
    assert all(f"### `invoke {name}`" in page for name in reference.load_collection().task_names)
    assert all(f"| `{v.code}` |" in page for v in TABLE)
    assert "`--init-timeout S`" not in page and "--init-timeout S" in page  # argparse's own words, verbatim


def test_the_readme_is_a_door() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme)
    assert links and all((ROOT / link).is_file() for link in links), links


def test_every_page_is_in_the_sites_navigation() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = _nav_pages(config["nav"])
    assert sorted(pages) == sorted(p.name for p in DOCS.glob("*.md"))
    assert config["theme"]["name"] == "material"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """A link to a page or a heading that is not there fails the build (mkdocs.yml's validation, --strict)."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
                          check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "index.html").is_file()
