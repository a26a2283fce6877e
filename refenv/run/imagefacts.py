"""What an environment's image holds, read once by a short container and kept by image id.

The container runs the image's own Python (a team image's `python:`, else the recipe's venv) with this
checkout's harness mounted read-only: it says its Python version and NVIDIA_REQUIRE_CUDA, then takes the stack
inventory (`python -m harness stack`: torch's version and CUDA, the architectures in its libraries, every
extension beside it, each imported). The answer is cached under the image id and the harness's digest, so an
unchanged image is read once. A team image's torch, CUDA, Python and architectures come from here (`resolve`),
so the predictions, readiness and the reports treat it as a built environment; an image without a usable
Python (3.8+) or without torch gets one clear reason, and its cells say it.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from harness import compat
from harness.schema.envelope import StackDocument
from harness.schema.stack_document import Distribution, Inventory, JudgedStack
from refenv import paths
from refenv.engines.seam import OUT, CellEngine, ContainerSpec
from refenv.errors import RefenvError
from refenv.model import codec
from refenv.model.builds import FAILED, EnvBuild
from refenv.model.labels import KIND, MANAGED, RUN
from refenv.model.matrix import Environment
from refenv.run.containers import HARNESS_MOUNT, harness_bind

T = TypeVar("T")
RECIPE_PYTHON = "python"   # the recipe images put their venv first on PATH (refenv/images/env.Dockerfile.j2)
TIMEOUT_S = 600.0
# Any Python, even 2.7, runs this far: it says what it is; 3.8 and newer then take the inventory.
PROBE = f"""
import json, os, sys
info = {{"python": "%d.%d.%d" % tuple(sys.version_info[:3]), "executable": sys.executable,
        "require_cuda": os.environ.get("NVIDIA_REQUIRE_CUDA")}}
open("{OUT}/image.json", "w").write(json.dumps(info))
if sys.version_info >= (3, 8):
    sys.path.insert(0, "{HARNESS_MOUNT}")
    sys.argv = ["harness", "stack", "--out", "{OUT}/stack.json", "--import-timeout", "300"]
    import runpy
    try:
        runpy.run_module("harness", run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
"""


@dataclass(frozen=True)
class ImageSays:
    """image.json, what PROBE writes before the harness runs: the image's Python and its NVIDIA_REQUIRE_CUDA."""

    python: str = ""
    executable: str | None = None
    require_cuda: str | None = None


@dataclass(frozen=True)
class ImageFacts:
    """What the image said about itself; `error` is why it cannot run the harness or has no torch."""

    interpreter: str
    python: str | None = None           # '3.11.2'
    torch: str | None = None            # '2.14.1+cu130'
    cuda: str | None = None             # '13.0'; None for a CPU build
    arch: tuple[str, ...] | None = None
    require_cuda: str | None = None     # the image's NVIDIA_REQUIRE_CUDA
    labels: dict[str, str] = field(default_factory=dict)
    stack: Inventory | None = None      # the inventory (harness/stack/inventory.py)
    error: str | None = None


def interpreter_of(env: Environment) -> str:
    return env.team.interpreter if env.team else RECIPE_PYTHON


def probe_spec(image: str, interpreter: str, out_dir: str, run_id: str) -> ContainerSpec:
    return ContainerSpec(image=image, command=(PROBE,), entrypoint=(interpreter, "-c"),
                         environment=(("PYTHONDONTWRITEBYTECODE", "1"), ("HOME", "/tmp")),
                         labels=((MANAGED, "true"), (KIND, "image-facts"), (RUN, run_id)),
                         binds=((out_dir, OUT, False), harness_bind()), mem_limit="6g")


def _read(cls: type[T], data: object) -> T | None:
    """`data` as `cls`, or None when the probe wrote nothing, or what it wrote does not fit (a cut-short file)."""
    try:
        return None if data is None else codec.decode(cls, data)
    except codec.DecodeError:
        return None


def _inventory(stack_doc: object) -> Inventory | None:
    doc = _read(StackDocument, stack_doc)
    return doc.stack.inventory if doc is not None and isinstance(doc.stack, JudgedStack) else None


def read_facts(interpreter: str, image_doc: object, stack_doc: object, labels: dict[str, str],
               logs: str = "") -> ImageFacts:
    """The facts from what the probe wrote, as parsed JSON: image.json and the harness's stack document (pure)."""
    facts = ImageFacts(interpreter, labels=labels)
    said = _read(ImageSays, image_doc)
    if said is None:
        tail = " | ".join(line for line in logs.strip().splitlines()[-3:] if line.strip())
        return replace(facts, error=f"the image's Python ({interpreter}) did not run" + (f": {tail}" if tail else ""))
    python = said.python
    facts = replace(facts, python=python, require_cuda=said.require_cuda)
    if tuple(int(p) for p in python.split(".")[:2] if p.isdigit()) < (3, 8):
        return replace(facts, error=f"the image's Python ({interpreter}) is {python}: the harness needs 3.8 or newer "
                       "(name another with python: in matrix.yaml)")
    stack = _inventory(stack_doc)
    if stack is None:
        return replace(facts, error=f"the stack inventory did not complete under {interpreter} {python}"
                       + (f": {logs.strip().splitlines()[-1]}" if logs.strip() else ""))
    torch: Distribution | None = stack.member("torch")
    facts = replace(facts, stack=stack)
    if torch is None:
        return replace(facts, error=f"no torch in the image ({interpreter}, Python {python})")
    return replace(facts, torch=torch.version_label or torch.version, cuda=torch.built_for.cuda,
                   arch=torch.arch or None)


def _cache_file(image_id: str, interpreter: str, harness_digest: str) -> Path:
    key = hashlib.sha256(f"{image_id}\0{interpreter}\0{harness_digest}".encode()).hexdigest()[:32]
    return paths.cache_root() / "image-facts" / f"{key}.json"


def read_image(engine: CellEngine, labels: dict[str, str], image: str, interpreter: str, harness_digest: str,
               run_id: str) -> ImageFacts:
    """The image's facts, from the cache or from a probe container."""
    image_id = engine.image_id(image) or image
    cached = _cache_file(image_id, interpreter, harness_digest)
    if cached.is_file():
        try:
            return codec.decode(ImageFacts, json.loads(cached.read_text(encoding="utf-8")))
        except (ValueError, codec.DecodeError):
            pass  # an unreadable cache entry is read again
    with tempfile.TemporaryDirectory(prefix="refenv-facts-") as out:
        Path(out).chmod(0o777)  # the image's own user writes here
        try:
            outcome = engine.run_here(probe_spec(image, interpreter, out, run_id), TIMEOUT_S)
            logs = outcome.logs
        except RefenvError as exc:
            logs = exc.message
        docs = [_json(Path(out) / name) for name in ("image.json", "stack.json")]
    facts = read_facts(interpreter, docs[0], docs[1], labels, logs)
    if facts.error is None or facts.python:  # a container that could not start at all is tried again next run
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(codec.encode(facts)), encoding="utf-8")
    return facts


def _json(path: Path) -> object:
    """The file as parsed JSON, not yet trusted (read_facts reads it as its record); None when unreadable."""
    try:
        data: object = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data


def resolve(env: Environment, facts: ImageFacts | None) -> Environment:
    """A team environment with its torch, variant, Python and architectures as its image has them; a recipe
    environment as it is (its tables already say them)."""
    if env.team is None or facts is None or facts.error or not facts.torch:
        return env
    python = ".".join((facts.python or "").split(".")[:2])
    return replace(env, torch=facts.torch, variant=compat.variant_of(facts.torch, facts.cuda), python=python,
                   arch=facts.arch)


def unusable(build: EnvBuild, facts: ImageFacts | None) -> EnvBuild:
    """The build of a team image the harness cannot use, as a failure with the facts' reason (its cells say it)."""
    if facts is None or facts.error is None:
        return build
    return replace(build, status=FAILED, error=facts.error, log_tail=facts.error)
