"""A package index's files for one project, and each wheel's metadata, over HTTP (the I/O of `compat refresh`).

The project page is asked for in the simple API's JSON form (PEP 691: `Accept:
application/vnd.pypi.simple.v1+json`); an index that answers HTML instead (PEP 503, as download.pytorch.org
does) is read from its anchors. A file's metadata is PEP 658's `<file URL>.metadata` where the index says it
has one (PEP 714's `core-metadata` key or `data-core-metadata` attribute, and their older `dist-info-metadata`
spellings); else, where the server answers ranged requests, the wheel's own METADATA member is read through
`remotezip` (a few kilobytes of a wheel of hundreds of megabytes); else it is not read, and said.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from refenv.errors import RefenvError
from refenv.refresh import remotezip

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
ACCEPT = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
TIMEOUT_S = 60.0
USER_AGENT = "refenv-compat-refresh"


class IndexUnreadable(RefenvError):
    """The index could not be read: its URL, what it answered, and what to do."""


@dataclass(frozen=True)
class IndexFile:
    """One file the project page lists."""

    filename: str
    url: str                       # absolute, without its #fragment
    requires_python: str | None
    core_metadata: bool            # PEP 658 / 714: the index serves `url + ".metadata"`
    size: int | None = None        # PEP 700 (api-version 1.1)
    yanked: bool = False


def _metadata_flag(value: object) -> bool:
    """PEP 714's key holds a dict of hashes or true; false or absent means none is served."""
    return bool(value) and value != "false"


def files_from_json(data: object, page_url: str) -> list[IndexFile]:
    """The files of a PEP 691 project page (pure)."""
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise IndexUnreadable(f"{page_url}: the JSON page has no `files` list (PEP 691)")
    out = []
    for f in data["files"]:
        if not isinstance(f, dict) or not isinstance(f.get("filename"), str) or not isinstance(f.get("url"), str):
            continue
        meta = f.get("core-metadata", f.get("dist-info-metadata"))
        size = f.get("size")
        out.append(IndexFile(f["filename"], urldefrag(urljoin(page_url, f["url"]))[0], f.get("requires-python"),
                             _metadata_flag(meta), size if isinstance(size, int) else None,
                             bool(f.get("yanked"))))
    return out


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.anchors.append(dict(attrs))


def files_from_html(text: str, page_url: str) -> list[IndexFile]:
    """The files of a PEP 503 project page, with PEP 658/714's data-core-metadata attributes (pure)."""
    parser = _Anchors()
    parser.feed(text)
    out = []
    for a in parser.anchors:
        href = a.get("href")
        if not href:
            continue
        url = urldefrag(urljoin(page_url, href))[0]
        filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
        meta = a.get("data-core-metadata", a.get("data-dist-info-metadata"))
        out.append(IndexFile(filename, url, a.get("data-requires-python"), meta is not None and meta != "false",
                             None, "data-yanked" in a))
    return out


def _open(request: urllib.request.Request, what: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            status = answer.status
            headers = {k.lower(): v for k, v in answer.headers.items()}
            if request.get_header("Range") and status != 206:
                return status, headers, b""  # the whole file was offered: its body is not read
            return status, headers, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {}, b""
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise IndexUnreadable(f"{request.full_url}: cannot reach it ({reason})",
                          f"check the URL of {what}, or the network") from None


def project_files(index: str, project: str = "torch") -> list[IndexFile]:
    """The files the index lists for the project (PEP 691 JSON where it answers so, else its HTML page)."""
    page = index.rstrip("/") + f"/{project}/"
    status, headers, body = _open(urllib.request.Request(page, headers={"Accept": ACCEPT,
                                                                       "User-Agent": USER_AGENT}), "the index")
    if status != 200:
        raise IndexUnreadable(f"{page}: the index answered HTTP {status}",
                          "give the index's simple API root, e.g. https://pypi.org/simple or "
                          "https://download.pytorch.org/whl/cu130")
    kind = headers.get("content-type", "").split(";")[0].strip()
    text = body.decode("utf-8", "replace")
    if kind == JSON_TYPE or (kind.endswith("json") and text.lstrip().startswith("{")):
        try:
            return files_from_json(json.loads(text), page)
        except ValueError as exc:
            raise IndexUnreadable(f"{page}: the JSON page does not parse ({exc})") from None
    return files_from_html(text, page)


def _reader(url: str) -> remotezip.Reader:
    def read(start: int, length: int) -> bytes:
        if length <= 0:
            return b""
        request = urllib.request.Request(url, headers={"Range": f"bytes={start}-{start + length - 1}",
                                                       "User-Agent": USER_AGENT})
        status, _, body = _open(request, "the wheel")
        if status != 206:
            raise RangeRefused(f"{url}: HTTP {status} to a ranged request")
        return body
    return read


class RangeRefused(RefenvError):
    """The server does not answer ranged requests (so the wheel itself would have to be downloaded)."""


def _size(url: str) -> int | None:
    """The file's size from a one-byte ranged answer's Content-Range ('bytes 0-0/539172785'); None when the
    server does not answer ranges."""
    status, headers, _ = _open(urllib.request.Request(url, headers={"Range": "bytes=0-0", "User-Agent": USER_AGENT}),
                               "the wheel")
    m = re.fullmatch(r"bytes \d+-\d+/(\d+)", headers.get("content-range", "").strip())
    return int(m.group(1)) if status == 206 and m else None


def _is_metadata(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] == "METADATA"


def metadata(f: IndexFile) -> tuple[str | None, str]:
    """(the wheel's core metadata, how it was read) or (None, why not)."""
    if f.core_metadata:
        url = f.url + ".metadata"
        status, _, body = _open(urllib.request.Request(url, headers={"User-Agent": USER_AGENT}), "the metadata")
        if status == 200:
            return body.decode("utf-8", "replace"), f"PEP 658 {url}"
    try:
        size = f.size if f.size is not None else _size(f.url)
        if size is None:
            return None, f"{f.url}: no metadata file, and the server does not answer ranged requests"
        name, data = remotezip.read_member(_reader(f.url), size, _is_metadata)
    except (RangeRefused, remotezip.ZipReadError) as exc:
        return None, f"{f.url}: {exc}"
    return data.decode("utf-8", "replace"), f"ranged read of {name} in {f.url}"
