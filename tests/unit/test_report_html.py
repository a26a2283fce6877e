"""report.html: one self-contained page with grids, evidence, rooflines; every string from a container escaped."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from refenv.model.rundoc import RunDocument, from_data
from refenv.report.html import render_html
from tests.unit.run_samples import raw, sample

VOID = {"meta", "br", "img", "input", "link", "hr", "wbr", "source", "col", "area", "base", "embed", "track"}
SVG_EMPTY = {"line", "circle", "rect", "path", "polyline"}



class Page(HTMLParser):
    """Collects tags, attributes, and whether every element was closed in order."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.attrs: list[tuple[str, dict[str, str | None]]] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs.append((tag, dict(attrs)))
        self.scripts += tag == "script"
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
        else:
            self.stack.pop()


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page


def test_page_is_well_formed_and_self_contained() -> None:
    html = render_html(sample("failures"))
    page = parse(html)
    assert page.errors == [] and page.stack == []
    assert page.scripts == 1  # the one inline script
    for tag, attrs in page.attrs:
        assert "src" not in attrs or tag not in {"script", "img", "iframe"}, (tag, attrs)
        assert not (tag == "link" and attrs.get("rel") == "stylesheet")
        href = attrs.get("href") or ""
        assert href == "" or href.startswith("#"), href
    assert "@import" not in html and "url(" not in html
    assert "default-src 'none'" in html  # the page may not fetch anything, even by mistake


def test_grid_cells_are_coloured_by_status_and_link_to_their_evidence() -> None:
    html = render_html(sample("failures"))
    assert html.count('class="cell s-fail"') == 2
    assert html.count('class="cell s-build"') == 8
    assert html.count('class="cell s-notrun"') == 4
    assert html.count('class="cell s-error"') == 3  # ERROR, TIMEOUT, OOM_KILLED
    anchors = set(re.findall(r'data-cell="(cell-\d+)"', html))
    ids = set(re.findall(r'<details class="ev [^"]*" id="(cell-\d+)"', html))
    assert anchors and anchors <= ids and len(ids) == 24


def test_fail_cell_evidence_has_reason_verdicts_message_findings_and_copyable_fixes() -> None:
    doc = sample("failures")
    html = render_html(doc)
    i = next(i for i, c in enumerate(doc.cells) if c.id == "torch-2.14.1-cu130/r570/gpu")
    block = html.split(f'id="cell-{i}"')[1].split("</details>")[0]
    assert "expected DRIVER_TOO_OLD, observed DRIVER_BROKEN: torch&#39;s message lacks &#39;is too old&#39;" in block
    assert '<pre class="msg">Unexpected error from cudaGetDeviceCount().' in block
    assert "cuInit fails with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)" in block
    assert '<code>cat /proc/driver/nvidia/version &amp;&amp; nvidia-smi</code><button type="button" class="copy"' in block
    assert '<span class="tag">simulated driver</span>' in block


def test_probe_and_memory_summaries_in_a_cells_evidence() -> None:
    doc = sample("failures")
    html = render_html(doc)
    i = next(i for i, c in enumerate(doc.cells) if c.id == "torch-2.10.0-cu128/r580/gpu")
    block = html.split(f'id="cell-{i}"')[1].split("</details>")[0]
    assert "GPU probes waived: host r580 is a simulated driver" in block
    assert "<td>GEMM fp32 through oneDNN (CPU)</td><td>0.1603 TFLOP/s</td><td>0.3323 TFLOP/s</td><td>48%</td>" in block
    assert ('<td class="off" title="FAIL: predicted 418 KiB, measured 547 KiB (within 5%)">'
            "418 KiB → 547 KiB (+31.0%)</td>") in block
    assert '<td title="PASS: predicted 249 KiB, measured 249 KiB (exact)">249 KiB</td>' in block
    assert '<div class="why">RuntimeError: saved tensor hooks are not supported inside torch.compile</div>' in block


def test_script_in_a_torch_message_is_escaped() -> None:
    doc = (raw("failures"))
    failed = next(c for c in doc["cells"] if c["id"] == "torch-2.14.1-cu130/r570/gpu")
    failed["observed"]["torch_message"] = '<script>alert("owned")</script>'
    failed["reason"] = "</details><img src=x onerror=alert(1)>"
    failed["observed"]["findings"][0]["remediation"] = ["<b>rm -rf</b>"]
    html = render_html(from_data(doc))
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<code>&lt;b&gt;rm -rf&lt;/b&gt;</code>" in html
    assert parse(html).errors == []


def test_rooflines_per_environment_and_host_with_cpu_figures_said_plainly() -> None:
    html = render_html(sample("passing"))
    section = html.split('<section id="rooflines">')[1].split("</section>")[0]
    assert section.count("<svg") == 6  # 2 real H200 + 4 simulated hosts' CPU pictures
    assert "torch-2.14.1-cu130 on local: NVIDIA H200" in section
    assert "GPU figures: spec roofs from the GPU&#39;s data sheet" in section
    assert "CPU figures: host r580 is a simulated driver" in section
    cpu = section.split('<details class="cpu-roofs"')[1]
    assert "NVIDIA H200" not in cpu  # the GPU pictures are not among the CPU ones


def test_summary_bar_has_outcome_and_a_filter_chip_per_status_present() -> None:
    html = render_html(sample("failures"))
    bar = html.split('<header class="top">')[1].split("</header>")[0]
    assert '<div class="outcome o-failed">FAILED</div>' in bar
    chips = re.findall(r'class="chip s-\w+" data-status="(\w+)"', bar)
    assert chips == ["PASS", "FAIL", "ERROR", "BUILD_FAILED", "TIMEOUT", "OOM_KILLED", "NOT_RUN"]


def test_partial_and_empty_documents_render() -> None:
    html = render_html(sample("partial"))
    assert "This run was interrupted" in html and 'o-interrupted' in html
    assert html.count('class="cell s-missing"') == 5  # hidden: 2 envs x 3 hosts, one cell written
    assert parse(html).errors == []
    empty = render_html(RunDocument())
    assert "EMPTY" in empty and parse(empty).errors == []
