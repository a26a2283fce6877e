"""What a label names, in any spelling and language: 'PyTorch Version', 'torch版本', 'Версия драйвера',
'Versão do PyTorch', 'CUDA は利用可能か'. A label is told by the words it holds, not by a list of whole
labels: an issue template, collect_env and a reporter's own notes each spell them differently.

The words are the plain vocabulary of each language (English, Chinese, Japanese, Korean, Russian, Spanish,
Portuguese, German, French) for the few things a report labels.
"""

from __future__ import annotations

import re
from functools import lru_cache

TORCH = ("torch",)
CUDA = ("cuda",)
BUILD = ("build", "built", "compil", "编译", "構建", "构建", "ビルド", "빌드", "сбор", "собран", "kompil")
AVAILABLE = ("available", "availab", "可用", "利用可能", "使用可能", "사용 가능", "доступ", "disponib", "disponív",
             "verfügbar", "is_available", "support")
DRIVER = ("driver", "驱动", "驅動", "ドライバ", "드라이버", "драйвер", "controlador", "treiber", "pilote")
GPU = ("gpu", "graphics", "video card", "显卡", "顯示卡", "顯卡", "グラフィック", "ビデオカード", "그래픽",
       "видеокарт", "графическ", "tarjeta gráfica", "tarjeta de video", "placa de vídeo", "placa de video",
       "grafikkarte", "carte graphique")
RUNTIME = ("runtime", "运行时", "執行時", "ランタイム", "런타임", "выполнени", "tiempo de ejecución")
PLATFORM = ("platform", "平台", "プラットフォーム", "플랫폼", "платформ", "plataforma", "plateforme")
PYTHON = ("python",)
# An operating-system label is the whole label (a word such as 'system' appears in other labels too).
OS = frozenset(("os", "os version", "system", "operating system", "os の種類", "操作系统", "作業系統", "系统", "系統",
                "オペレーティングシステム", "운영체제", "ос", "операционная система", "система", "sistema operativo",
                "sistema operacional", "so", "betriebssystem", "système d'exploitation", "platform"))
_VOCABULARY = re.compile("|".join(re.escape(w) for w in (*TORCH, *CUDA, *DRIVER, *GPU, *PYTHON)))
_NOISE_RE = re.compile(r"[`*_#\"'()\[\]?¿:：]|\bthe\b")


def _has(label: str, words: tuple[str, ...]) -> bool:
    return any(w in label for w in words)


@lru_cache(maxsize=4096)  # a pasted log repeats its labels
def field_of(label: str) -> str | None:
    """The thing a label names: torch_version, cuda_built, cuda_available, driver, gpus, nvcc (the system
    CUDA toolkit), python_platform, python, os, cuda (a bare 'CUDA version': toolkit, driver or torch's, the
    label does not say), or None."""
    low = " ".join(_NOISE_RE.sub(" ", label.lower()).split())
    if not low or len(low) > 60 or not (_VOCABULARY.search(low) or low in OS or _strip_version(low) in OS):
        return None
    if _has(low, CUDA) and _has(low, TORCH) and _has(low, BUILD):
        return "cuda_built"
    if _has(low, CUDA) and _has(low, AVAILABLE):
        return "cuda_available"
    if _has(low, TORCH) and not _has(low, CUDA):
        return "torch_version"
    if _has(low, DRIVER):
        return "driver"
    if _has(low, GPU):
        return "gpus"
    if _has(low, CUDA) and _has(low, RUNTIME):
        return "nvcc"
    if _has(low, PYTHON):
        return "python_platform" if _has(low, PLATFORM) else "python"
    if low in OS or _strip_version(low) in OS:
        return "os"
    if _has(low, CUDA) and len(_strip_version(low).split()) <= 2:
        return "cuda"
    return None


_VERSION_WORDS = re.compile(r"\b(?:version|ver|versión|versão|versao|версия|の|de|do|del|da)\b|版本|バージョン|버전")


def _strip_version(low: str) -> str:
    return " ".join(_VERSION_WORDS.sub(" ", low).split())


# Yes and no as a template's answer puts them.
YES = frozenset(("true", "yes", "y", "是", "是的", "有", "可用", "はい", "예", "да", "sí", "si", "sim", "ja",
                 "oui"))
NO = frozenset(("false", "no", "n", "否", "不", "不可用", "没有", "いいえ", "아니요", "нет", "não", "nao", "nein",
                "non"))


def yes_no(value: str) -> bool | None:
    """True for a yes, False for a no, in any of these languages; None for anything else."""
    word = value.strip(" `*'\".,;。").lower()
    return True if word in YES else False if word in NO else None
