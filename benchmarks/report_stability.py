"""Stability of the report reader's verdict under rewrites that change nothing a person would care about.

Every corpus report (see report_corpus.py) is rewritten: re-wrapped at 60 and at 100 columns (at spaces,
as a mail client or an editor does), wrapped sentences joined back into one line, quoted with '> ',
fenced and unfenced, CRLF line ends, runs of spaces as tabs, every line indented, a closing sentence
added, embedded in a longer thread with unrelated logs, its template labels translated (Chinese,
Japanese, Russian, Spanish, Portuguese), and cut at the start of its last third. The score is the
share of rewrites whose verdict is the verdict of the report as posted. The label translations here
are this script's own, written apart from the reader's vocabulary. Target: >= 99%; exit 1 if not.

    python benchmarks/report_stability.py [DIR] [--show N]   # N: print up to N changed verdicts
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from report_corpus import ROOT, judge, read_corpus  # noqa: E402

TARGET = 0.99
_FENCE_RE = re.compile(r"^\s*(?:```|~~~)")

# Labels as issue templates and collect_env print them, and how a reporter writing in each language
# would put them. Lower-cased English -> (zh, ja, ru, es, pt).
LABELS: dict[str, tuple[str, str, str, str, str]] = {
    "pytorch version": ("PyTorch 版本", "PyTorch のバージョン", "Версия PyTorch", "Versión de PyTorch",
                        "Versão do PyTorch"),
    "pytorch": ("PyTorch 版本", "PyTorch バージョン", "Версия PyTorch", "Versión de PyTorch", "Versão do PyTorch"),
    "torch version": ("torch 版本", "torch のバージョン", "Версия torch", "Versión de torch", "Versão do torch"),
    "cuda version": ("CUDA 版本", "CUDA のバージョン", "Версия CUDA", "Versión de CUDA", "Versão do CUDA"),
    "cuda": ("CUDA 版本", "CUDA バージョン", "Версия CUDA", "Versión de CUDA", "Versão do CUDA"),
    "gpu": ("显卡", "グラフィックボード", "Видеокарта", "Tarjeta gráfica", "Placa de vídeo"),
    "gpu models and configuration": ("显卡型号与配置", "GPU のモデルと構成", "Модели и конфигурация GPU",
                                     "Modelos y configuración de GPU", "Modelos e configuração de GPU"),
    "os": ("操作系统", "オペレーティングシステム", "Операционная система", "Sistema operativo",
           "Sistema operacional"),
    "operating system": ("操作系统", "OS の種類", "ОС", "Sistema operativo", "Sistema operacional"),
    "python": ("Python 版本", "Python のバージョン", "Версия Python", "Versión de Python", "Versão do Python"),
    "python version": ("Python 版本", "Python のバージョン", "Версия Python", "Versión de Python",
                       "Versão do Python"),
    "driver": ("驱动", "ドライバー", "Драйвер", "Controlador", "Driver"),
    "driver version": ("驱动版本", "ドライバーのバージョン", "Версия драйвера", "Versión del controlador",
                       "Versão do driver"),
    "nvidia driver version": ("NVIDIA 驱动版本", "NVIDIA ドライバーのバージョン", "Версия драйвера NVIDIA",
                              "Versión del controlador de NVIDIA", "Versão do driver NVIDIA"),
    "is cuda available": ("CUDA 是否可用", "CUDA は利用可能か", "Доступна ли CUDA", "¿Está CUDA disponible?",
                          "CUDA está disponível"),
    "cuda used to build pytorch": ("编译 PyTorch 所用的 CUDA", "PyTorch のビルドに使われた CUDA",
                                   "CUDA, с которой собран PyTorch", "CUDA usada para compilar PyTorch",
                                   "CUDA usado para compilar o PyTorch"),
    "cuda runtime version": ("CUDA 运行时版本", "CUDA ランタイムのバージョン", "Версия среды выполнения CUDA",
                             "Versión del runtime de CUDA", "Versão do runtime do CUDA"),
}
LANGUAGES = ("zh", "ja", "ru", "es", "pt")
_LABEL_RE = re.compile(r"^(?P<lead>\s*(?:[-*+]\s+)?(?:\*\*)?)(?P<label>[A-Za-z][A-Za-z ]{0,40}?)"
                       r"(?P<sep>(?:\*\*)?\s*[:\uff1a])")
_HEADING_RE = re.compile(r"^(?P<lead>#{2,4}\s+)(?P<label>[A-Za-z][A-Za-z ]{0,40}?)(?P<sep>\s*)$")

CLOSING = "\n\nAny help would be appreciated, I have been stuck on this for two days. Thanks!\n"
BEFORE = """Same here, following.

For what it's worth, cloning the repository itself went fine:
```
$ git clone --depth 1 https://example.org/lab/project.git
Cloning into 'project'...
remote: Enumerating objects: 412, done.
remote: Counting objects: 100% (412/412), done.
remote: Compressing objects: 100% (371/371), done.
Receiving objects: 100% (412/412), 2.91 MiB | 6.02 MiB/s, done.
Resolving deltas: 100% (38/38), done.
```

Here is the original report again:

"""
AFTER = """

Any update on this? The web front end also fails to build, but I think that is unrelated:
```
> frontend@0.4.1 build
> vite build

vite v5.2.8 building for production...
transforming (1203) node_modules/lodash-es/lodash.js
[plugin:vite:css] [postcss] /src/styles/main.css:12:3: Unknown word
error during build:
CssSyntaxError: [postcss] /src/styles/main.css:12:3: Unknown word
    at Input.error (node_modules/postcss/lib/input.js:106:16)
npm ERR! code 1
npm ERR! path /home/user/project/frontend
```
Thanks for looking into it.
"""


def wrap(width: int) -> Callable[[str], str]:
    def rewrite(text: str) -> str:
        out: list[str] = []
        for line in text.split("\n"):
            if len(line) <= width:
                out.append(line)
                continue
            out.extend(textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False,
                                     replace_whitespace=False, expand_tabs=False) or [line])
        return "\n".join(out)
    return rewrite


def joined(text: str) -> str:
    """Lines that continue a sentence (no closing punctuation, the next starts lower-case) joined."""
    out: list[str] = []
    for line in text.split("\n"):
        prev = out[-1].rstrip() if out else ""
        if prev and line.strip()[:1].islower() and prev[-1] not in ".:;!?)]}>|`'\"" and not _FENCE_RE.match(line):
            out[-1] = prev + " " + line.strip()
        else:
            out.append(line)
    return "\n".join(out)


def quoted(text: str) -> str:
    return "\n".join(("> " + line) if line else ">" for line in text.split("\n"))


def fenced(text: str) -> str:
    return "```\n" + text.strip("\n") + "\n```\n"


def unfenced(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if not _FENCE_RE.match(line))


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def tabs(text: str) -> str:
    return "\n".join(re.sub(r" {2,}", "\t", line) for line in text.split("\n"))


def indented(text: str) -> str:
    return "\n".join("    " + line if line else line for line in text.split("\n"))


def closing(text: str) -> str:
    return text.rstrip("\n") + CLOSING


def thread(text: str) -> str:
    return BEFORE + text.strip("\n") + AFTER


def translated(language: str) -> Callable[[str], str]:
    column = LANGUAGES.index(language)

    def label(m: re.Match[str]) -> str:
        words = LABELS.get(" ".join(m.group("label").lower().split()))
        return m.group("lead") + words[column] + m.group("sep") if words else m.group(0)

    def rewrite(text: str) -> str:
        return "\n".join(_HEADING_RE.sub(label, _LABEL_RE.sub(label, line)) for line in text.split("\n"))
    return rewrite


def truncated(text: str) -> str:
    return text[: len(text) * 2 // 3]


REWRITES: dict[str, Callable[[str], str]] = {
    "wrap-60": wrap(60), "wrap-100": wrap(100), "joined": joined, "quoted": quoted, "fenced": fenced,
    "unfenced": unfenced, "crlf": crlf, "tabs": tabs, "indented": indented, "closing-prose": closing,
    "in-a-thread": thread, **{f"labels-{lang}": translated(lang) for lang in LANGUAGES}, "truncated": truncated,
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("dir", nargs="?", default=str(ROOT.parent / "shared" / "reports"))
    p.add_argument("--show", type=int, default=40, help="print up to this many changed verdicts")
    args = p.parse_args(argv)
    cases = read_corpus(Path(args.dir))
    if not cases:
        print(f"no case files (*.txt) in {args.dir}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    per_rewrite: dict[str, list[bool]] = defaultdict(list)
    changed: list[str] = []
    for case in cases:
        base, _ = judge(case.body)
        for name, rewrite in REWRITES.items():
            got, confidence = judge(rewrite(case.body))
            same = got == base
            per_rewrite[name].append(same)
            if not same:
                changed.append(f"{case.name} {name}: {base} -> {got} ({confidence})")
    elapsed = time.perf_counter() - started
    print("verdict unchanged, per rewrite:")
    for name, results in per_rewrite.items():
        print(f"  {name:16} {sum(results):4}/{len(results):<4} {sum(results) / len(results):6.1%}")
    if changed:
        print(f"changed ({len(changed)}):")
        for line in changed[:args.show]:
            print("  " + line)
    every = [r for results in per_rewrite.values() for r in results]
    share = sum(every) / len(every)
    print(f"{len(cases)} reports x {len(REWRITES)} rewrites in {elapsed:.2f} s")
    print(f"verdict unchanged: {sum(every)}/{len(every)} ({share:.2%})")
    return 0 if share >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
