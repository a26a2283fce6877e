"""What a report says happened in its own words rather than the stack's: each a clue for the answer to weigh.

A reporter paraphrases ("my Nvidia version is too old", "提示NVIDIA驱动太老", "默认是cpu版本",
"容器内...初始化失败"), names an error code without its text ("the messages with the error 804"), or says it
works one way and not another ("when run directly on the node, the assert passes"). Each phrase family
is written once for the languages reports arrive in (English, Chinese, Japanese, Korean, Russian,
Spanish, Portuguese, German); a clue says where it was read and never becomes a fact.
"""

from __future__ import annotations

import re
from functools import lru_cache

from harness.catalogue import entries, lookup
from harness.intake import match
from harness.intake.clues import Text
from harness.intake.parsed import Builder, Line

# The stack a paraphrase must be about (on the same line), in those languages.
_ABOUT_RE = re.compile(r"cuda|gpu|nvidia|driver|torch|驱动|驅動|显卡|ドライバ|드라이버|драйвер|controlador|"
                       r"treiber", re.I)
CLUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("init_failed_words", re.compile(
        r"initiali[sz]ation (?:failed|error)|failed to initiali[sz]e|初始化失败|初始化失敗|初始化错误|"
        r"初期化に失敗|初期化エラー|초기화 실패|ошибк\w{0,3} инициализации|не удалось инициализировать|"
        r"fall[oó] la inicializaci[oó]n|error de inicializaci[oó]n|falha (?:na|de) inicializa[cç][aã]o|"
        r"falha ao inicializar|Initialisierung fehlgeschlagen", re.I)),
    ("too_old_words", re.compile(
        r"(?:driver|nvidia|驱动|驅動|ドライバ|드라이버|драйвер|controlador|treiber)[^.\n。!?]{0,30}"
        r"(?:too old|is old|outdated|太老|太旧|过旧|过低|版本低|古い|오래|устарел|слишком стар|"
        r"demasiado antiguo|muito antigo|desatualizado|zu alt)|"
        # ... or the newer driver a build needs: 'requires a higher version nvidia driver', 'needs a newer driver'.
        r"(?:requires?|needs?|required|needed)\s[^.\n]{0,30}?\b(?:newer|higher|more recent)\s(?:version\s(?:of\s)?)?"
        r"(?:the\s)?(?:nvidia\s|gpu\s|cuda\s)?driver", re.I)),
    ("cpu_build_words", re.compile(
        r"cpu[- ]?only (?:version|build|wheel|variant|torch|pytorch)|"
        r"cpu (?:version|build|wheel|variant) of (?:py)?torch|\[cpu\] (?:version|build|wheel|variant)|"
        r"(?:py)?torch[^.\n]{0,12}\bcpu[- ]?(?:only )?(?:version|build|wheel)|"
        r"cpu\s?版本|cpu\s?版|cpu\s?バージョン|cpu\s?버전|верси\w{1,2} (?:для )?cpu|cpu-верси|"
        r"versi[oó]n (?:de |para )?cpu|vers[aã]o (?:de |para )?cpu|CPU-Version", re.I)),
    # CUDA's initialisation that never returns, in a reporter's words: a hang word beside is_available, cuInit or
    # an initialisation (a training that hangs later is not this).
    ("hang_words", re.compile(
        r"(?:is_available|cuInit|cuda\.init|initiali[sz]|初始化|初期化|초기화|инициализ|inicializ)[^\n]{0,60}?"
        r"(?:hang|hung|freez|stuck|never return|卡住|卡死|无响应|ハング|固ま|フリーズ|멈|завис|cuelga|congela|trava|"
        r"hängt)|(?:hang|hung|freez|stuck|卡住|卡死|ハング|固ま|フリーズ|завис|cuelga|congela|trava|hängt)[^\n]{0,60}?"
        r"(?:is_available|cuInit|cuda\.init|initiali[sz]|初始化|初期化|초기화|инициализ|inicializ)", re.I)),
    ("works_alone", re.compile(
        r"run(?:ning)? (?:it |them )?(?:directly|alone|by itself|on its own|manually|outside)|run directly|"
        r"单独运行|直接运行|单独跑|単独で実行|직접 실행|запуск\w{0,3} напрямую", re.I)),
    ("arch_words", re.compile(r"TORCH_CUDA_ARCH_LIST|compute capability|CUDA capability|\bsm_\d{2,3}\b|"
                              r"arch(?:itecture)? list", re.I)),
    # torch's repr of a device it opened: a log that prints it ran on the GPU.
    ("torch_named_device", re.compile(r"_CudaDeviceProperties\(name=")),
    # torch printed a tensor (or a device) on a CUDA device: `tensor([1.], device='cuda:0')`, `device(type='cuda', ...`.
    ("tensor_on_gpu", re.compile(r"device='cuda(?::\d{1,2})?'\)|device\(type='cuda'")),
    # nvidia-smi's process table lists a Python process holding GPU memory: the work runs on the GPU.
    ("smi_process", re.compile(r"\|\s{1,8}\d{1,2}\s{1,8}(?:N/A\s{1,8}N/A\s{1,8})?\d{2,8}\s{1,8}C(?:\+G)?\s{1,8}"
                               r"\S{0,120}python[\w.]{0,12}\s{1,60}\d{1,7}\s?MiB", re.I)),
    # Timings compared between CPU and GPU in words ('the GPU is slower than the CPU', 'CPU is faster than CUDA',
    # 'GPU比CPU慢'): both ran, so CUDA works; labelled times and tables are read by _timed() below.
    ("gpu_slower_words", re.compile(
        r"\b(?:gpu|cuda)\b[^.\n]{0,40}?\b(?:slower|no faster|not faster|as slow as|takes? longer)\b[^.\n]{0,25}?"
        r"\b(?:than|then|as|compared to)\b[^.\n]{0,15}?\bcpu\b|"
        r"\bslower\s(?:on|with|using|in)\s(?:the\s)?(?:gpu|cuda)\b[^.\n]{0,15}?\b(?:than|then)\b[^.\n]{0,15}?\bcpu\b|"
        r"\bcpu\b[^.\n]{0,40}?\bfaster\b[^.\n]{0,25}?\b(?:than|then)\b[^.\n]{0,15}?\b(?:gpu|cuda)\b|"
        r"(?:gpu|cuda)(?:比|比起)cpu(?:还|更)?慢|cpu(?:比|比起)(?:gpu|cuda)(?:还|更)?快", re.I)),
    # Utilisation low, in words or figures ('0% GPU utilization', 'GPU-Util stays at 3%', 'GPU usage is low',
    # 'GPU利用率为0'): a clue that the GPU waits, counted as evidence only beside memory held (read()).
    ("low_util_words", re.compile(
        r"(?:gpu[- ]?util(?:i[sz]ation)?|utili[sz]ation|(?:gpu|cuda)\s(?:usage|load|use))[^\n%]{0,40}?"
        r"(?<![\d.])(?:[0-9]|10)(?:\.\d{1,2})?\s?%|"
        r"(?<![\d.])(?:[0-9]|10)(?:\.\d{1,2})?\s?%\s(?:of\s)?(?:the\s)?(?:gpu[- ]?|cuda\s)?(?:util|usage|load)|"
        r"\b(?:low|zero|no|little|barely any)\s(?:gpu[- ]?)?(?:util(?:i[sz]ation)?|usage|load)\b|"
        r"(?:gpu|cuda)\s?(?:util(?:i[sz]ation)?|usage|load)\s(?:is|stays?|remains?|was|at)\s(?:very\s)?(?:low|zero)|"
        r"(?:利用率|使用率)[^\n]{0,12}?(?:(?<![\d.])(?:[0-9]|10)\s?%?(?!\d)|很低|低|为零)", re.I)),
    # GPU memory held, in words: a verb of holding beside it ('uses 9 GB of GPU memory', 'memory allocated',
    # '显存占用 10G'); a size alone is the card's capacity ('6GB VRAM', 'total_memory=8192MB'), not memory held,
    # and nvidia-smi's 'Memory-Usage' header is a column's name (its figures are read in driverlog.py).
    ("memory_held_words", re.compile(
        r"(?:(?:memory|vram)\s|显存)[^\n.,;|]{0,30}?(?:\bused\b|\busage\b|\ballocated\b|\boccupied\b|\bin use\b|"
        r"\bis full\b|\bfilled\b|\btaken\b|\bheld\b|占用|占满)|"
        r"(?:\buses?|\busing|\bholds?|\ballocat(?:es?|ing)|\boccup(?:ies|y|ying)|\btakes?|\bfills?)\s[^\n.,;|]{0,30}?"
        r"(?:memory|vram|显存)", re.I)),
    # The reporter says the work runs on a GPU by its index ('the program consistently uses cuda index 0').
    ("runs_on_gpu", re.compile(r"\b(?:uses?|using|runs? on|running on|stays? on|always on)\s(?:the\s)?(?:cuda|gpu)"
                               r"\s?(?:index\s|device\s|:|#)?\d\b(?![.,]\d)", re.I)),  # 'CUDA 7.5' is a version
    # torch's own source line where a traceback stops inside its driver check (torch/cuda/__init__.py,
    # _check_driver, torch 0.x-1.x): the last line of each raise is printed even when its message is not pasted.
    ("source_DRIVER_TOO_OLD", re.compile(r'of the CUDA driver\.\s{0,2}"""\s{0,2}\.format\(')),
    ("source_NO_DRIVER", re.compile(r'Download/index\.aspx\s{0,2}"""\s{0,2}\)')),
    ("failure_trace", re.compile(r"Traceback \(most recent call last\)|\b[A-Z][A-Za-z]{1,40}(?:Error|Exception): ")),
)
# An error code named in prose ('the error 804', 'Error 803'): the distinctive CUDA driver codes anywhere,
# any other code only on a line that names CUDA.
_CODE_RE = re.compile(r"\berror\s{0,2}(?:code\s{0,2})?[#(]?(?P<code>\d{1,3})\b", re.I)
# Words (lower case) one of which a clue's match holds: a clue's pattern runs only on a text that has one.
_CONTEXTUAL = ("init_failed_words", "too_old_words", "cpu_build_words")  # must be about the stack, on their line
KEYWORDS = {
    "init_failed_words": ("initiali", "初始化", "初期化", "초기화", "инициализ", "inicializ"),
    "too_old_words": ("old", "outdated", "newer", "higher", "more recent",
                      "太老", "太旧", "过旧", "过低", "版本低", "古い", "오래", "устарел", "стар",
                      "antiguo", "antigo", "desatualizado"),
    "cpu_build_words": ("cpu",), "works_alone": ("run", "运行", "跑", "実行", "실행", "запуск"),
    "hang_words": ("hang", "hung", "freez", "stuck", "never return", "卡住", "卡死", "无响应", "ハング", "固ま",
                   "フリーズ", "멈", "завис", "cuelga", "congela", "trava", "hängt"),
    "arch_words": ("arch", "capability", "sm_"), "torch_named_device": ("_cudadeviceproperties",),
    "tensor_on_gpu": ("device='cuda", "device(type='cuda'"), "smi_process": ("python",),
    "failure_trace": ("traceback", "error: ", "exception: "), "runs_on_gpu": ("cuda", "gpu"),
    "gpu_slower_words": ("slower", "faster", "longer", "慢", "快"),
    "low_util_words": ("util", "usage", "load", " use", "利用率", "使用率"),
    "memory_held_words": ("memory", "vram", "显存"),
    "source_DRIVER_TOO_OLD": ('""".format(',), "source_NO_DRIVER": ('index.aspx"""',),
}
_DISTINCTIVE = (802, 803, 804)
# A time measured on a device and labelled with it ('cpu: 1.2s', 'CUDA time 3.4 ms', 'GPU took 12 sec').
_TIMED_RE = re.compile(r"\b(?P<dev>cpu|cuda(?::\d{1,2})?|gpu)\b[^\d\n]{0,25}?(?<![\w.])\d{1,6}(?:\.\d{1,6})?\s?"
                       r"(?:s|ms|sec|secs|seconds?|us|µs|μs|ns|min|mins|minutes?)(?![\w/])", re.I)
# A table's header with a CPU column and a CUDA (or GPU) column: markdown, tab-, comma- or space-aligned, and
# torch.utils.benchmark.Compare's ('|   cpu   |  cuda', torch/utils/benchmark/utils/compare.py).
_CELL = r"(?:[|\t,]|\s{2})\s{0,8}"
_TABLE_HEAD_RE = re.compile(rf"(?:^|{_CELL})cpu\b[^\n]{{0,60}}?{_CELL}(?:cuda|gpu)\b|"
                            rf"(?:^|{_CELL})(?:cuda|gpu)\b[^\n]{{0,60}}?{_CELL}cpu\b", re.I)
_NUMBER_RE = re.compile(r"(?<![\w.])\d{1,9}(?:\.\d{1,9})?(?![\w.])")
_TABLE_ROWS = 4  # rows under a header read for its figures
# Evidence that the GPU holds the work's memory, beside which low utilisation says the GPU waits on its input.
_MEMORY_HELD = ("memory_held_words", "smi_memory_idle", "smi_process")


@lru_cache(maxsize=1)
def _names() -> re.Pattern[str]:
    """The CUDA and NVML error names the catalogue's rows carry ('cudaErrorNoKernelImageForDevice')."""
    names = sorted({e.code.name for e in entries() if e.code and e.code.name}, key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b")


def read(b: Builder, lines: list[Line], text: Text | None = None) -> None:
    text = text or Text(lines)
    for name, pattern in CLUES:
        about = _ABOUT_RE if name in _CONTEXTUAL else None
        line = text.first(KEYWORDS[name], pattern, about)
        if line is not None:
            b.clue(name, line)
    timed = _timed(text)
    if timed is not None:
        b.clue("gpu_timed", timed)
    elif "gpu_slower_words" in b.clues:
        number, raw = b.clues["gpu_slower_words"]
        b.clue("gpu_timed", Line(number, raw, raw))
    if "low_util_words" in b.clues and any(c in b.clues for c in _MEMORY_HELD):
        number, raw = b.clues["low_util_words"]
        b.clue("low_util", Line(number, raw, raw))
    # A paste cut off inside one of the stack's messages (its last line, or a line the reporter cut '[...]').
    for line in [ln for ln in lines if ln.text.endswith(("[...]", "\u2026"))] + [ln for ln in lines if ln.text][-1:]:
        cut = match.cut_short(line.text)
        entry = cut[0] if cut else None
        if entry is not None and entry.verdict and "{" in entry.text:
            b.clue(f"cut_{entry.verdict}", line)
            b.note(f"line {line.number} ends inside '{entry.text[:60]}...', cut short: {entry.meaning}")
    if "torch.is_available" in b.conflicts:
        number, raw = b.conflicts["torch.is_available"]
        b.clue("available_both", Line(number, raw, raw))
    for i in text.holding(("error",)):
        for m in _names().finditer(text.texts[i]):
            entry = lookup.by_code_name(m.group(0))
            if entry is not None and entry.verdict:
                b.clue(f"error_code_{entry.verdict}", lines[i])
        for m in _CODE_RE.finditer(text.texts[i]):
            code = int(m.group("code"))
            entry = lookup.by_cuda_error(code)
            if entry is None or not entry.verdict or not (code in _DISTINCTIVE or "cuda" in text.texts[i].lower()):
                continue
            b.clue(f"error_code_{entry.verdict}", lines[i])
            b.detail("error_code", f"{code} ({entry.code.name if entry.code else entry.id})", lines[i])


def _timed(text: Text) -> Line | None:
    """The line where the report compares a time on the CPU with one on a CUDA device: a labelled time of each
    (on one line or two), or a table with a CPU and a CUDA column and figures under it."""
    cpu = gpu = None
    for i in text.holding(("cpu", "cuda", "gpu")):
        line = text.texts[i]
        for m in _TIMED_RE.finditer(line):
            if m.group("dev").lower() == "cpu":
                cpu = i if cpu is None else cpu
            else:
                gpu = i if gpu is None else gpu
        if cpu is not None and gpu is not None:
            return text.lines[max(cpu, gpu)]
        # The raw line keeps a tab-separated header's tabs (normalising makes them one space).
        if _TABLE_HEAD_RE.search(line) or _TABLE_HEAD_RE.search(text.lines[i].raw):
            rows = text.texts[i + 1:i + 1 + _TABLE_ROWS]
            if any(len(_NUMBER_RE.findall(row)) >= 2 for row in rows):
                return text.lines[i]
    return None
