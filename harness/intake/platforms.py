"""Where the report ran, read from its prose and paths: Windows, WSL, macOS and Apple Silicon, ROCm, Colab,
a machine without a GPU, a batch scheduler, a container. Each is a clue that weighs on the verdict; a clear
sign of the operating system also sets host.os, marked inferred.
"""

from __future__ import annotations

import re

from harness.catalogue import lookup
from harness.intake.clues import Text
from harness.intake.parsed import Builder, Line

# (clue, pattern): the first line matching each pattern is kept as the clue's evidence.
CLUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("windows", re.compile(r"(?<![A-Za-z])[A-Z]:\\[\w$]|\bWin(?:dows)?\s?(?:7|8|10|11)\b|\bWindows\b|\bpowershell\b",
                           re.I)),
    ("wsl1", re.compile(r"\bWSL\s?1\b")),
    ("wsl", re.compile(r"\bWSL\s?2?\b|microsoft-standard|/mnt/[c-e]/", re.I)),
    ("macos", re.compile(r"\bmac\s?OS\b|\bOS\s?X\b|\bOSX\b|\bMacBook\b|\bDarwin\b|\biMac\b|/Users/\w|"
                         r"\bMac\s(?:mini|Studio|Pro|laptop|computer|notebook)\b|\bmy\sMac\b", re.I)),
    ("apple_silicon", re.compile(r"\bApple\s(?:Silicon|M\d)\b|\bM[1-4]\s(?:Pro|Max|Ultra|chip|Mac(?:Book)?)\b|"
                                 r"\bMacBook\s(?:Air|Pro)\s?M[1-4]\b|\bMac\sM[1-4]\b", re.I)),
    ("rocm", re.compile(r"\bROCm\s?\d|\+rocm\d|\bhipErr|\bAMD\s(?:Radeon|Instinct)\b|\bROCm (?:build|wheel)", re.I)),
    ("colab", re.compile(r"\bcolab\b", re.I)),
    ("no_gpu", re.compile(
        r"\b(?:no|without(?:\sa|\san)?|don'?t\shave(?:\sa|\san)?|doesn'?t\shave(?:\sa|\san)?)\s(?:NVIDIA\s|CUDA\s)?"
        r"(?:GPU|graphics card|Nvidia card)s?\b(?!\s(?:usage|utili|index|id\b|\d|memory|(?:(?:are|is)\s?)?av))|"
        r"\bVPS\b|\bVirtual ?Box\b|\bvirtual machine\b|\bIntel\(R\)? (?:U?HD|Iris)"
        r"|\bIntel U?HD\b|no NVIDIA devices found|No NVIDIA GPU found|\bCPU[- ]only (?:machine|server|runtime)\b",
        re.I)),
    ("scheduler", re.compile(r"\bslurm\b|\bsbatch\b|\bsrun\b|#SBATCH|\bqsub\b|#PBS\b|\bLSF\b|\bbsub\b", re.I)),
    ("gpu_requested", re.compile(r"--gres[= ]gpu|--gpus(?:-per-\w+)?[= ]\d|#SBATCH\s+-G\b")),
    ("container", re.compile(r"\bdocker\b|\bcontainer\b|\bnerdctl\b|\bpodman\b|\bkubernetes\b|\bk8s\b|\bk3s\b|"
                             r"\bcompose\b|\bkubectl\b|\bsingularity\b|\bapptainer\b|\bGKE\b|\bEKS\b|\bAKS\b|\bLXD\b|"
                             r"\bLXC\b|\bpods?\b|/\.dockerenv|容器|コンテナ|컨테이너|контейнер", re.I)),
    # The container (or pod) asked for a GPU: the runtime, device plugin or CDI should have given one.
    ("container_gpu_request", re.compile(r"nvidia\.com/gpu|runtimeClassName:\s{0,3}[\"']?nvidia|runtime:\s{0,3}nvidia|"
                                         r"--gpus[= ]|--runtime[= ]nvidia|driver:\s{0,3}nvidia|"
                                         # or in words: 'the GPU-enabled docker-compose', 'a GPU-enabled container'
                                         r"\bGPU[- ]enabled\s(?:docker(?:-compose)?|compose|container|image|pod)",
                                         re.I)),
    ("one_gpu", re.compile(r"\b(?:only|just)\s(?:have\s)?(?:one|1|a single)\s(?:NVIDIA\s)?(?:GPU|graphics card|card)\b|"
                           r"\bsingle[- ]GPU\b|\bone[- ]GPU\b|\b1 GPU\b|只有一(?:张|块|个)|一张显卡|一块显卡", re.I)),
    # A GPU torch.cuda cannot use: AMD's (ROCm/HIP, DirectML) or Intel's (XPU).
    ("other_gpu", re.compile(r"\bAMD\s(?:GPU|Radeon|graphics)|\bRadeon\b|\bRX\s?\d{3,4}[A-Z]{0,2}\b|"
                             r"\bIntel\s(?:Arc|XPU)|\bArc\s[AB]\d{3}\b|\bXPU\b|\bDG2\b|"
                             r"\bAMD\s?(?:显卡|グラフィック|그래픽)", re.I)),
    ("jetson", re.compile(r"\bJetson\b|\bJetPack\b|\bL4T\b|\bOrin\b|\bXavier\b|\btegra\b", re.I)),
    ("aarch64", re.compile(r"\baarch64\b|\barm64\b|\bsbsa\b|Grace[- ](?:Hopper|Blackwell)|\bG[HB]200\b", re.I)),
    ("compose_gpu", re.compile(r"capabilities:\s{0,3}\[")),
    ("smi_cuda_na", re.compile(r"CUDA Version:?\s{0,3}(?:of\s)?n/a|CUDA version of n/a", re.I)),
    ("smi_ok", re.compile(r"nvidia-smi\W{0,3}(?:ok|works|worked|is fine|runs fine|shows? (?:the|my) GPU)|"
                           r"\b(?:good|working|fine)\snvidia-smi\b", re.I)),
    ("nvidia_gpu", re.compile(r"\b(?:GeForce|Quadro|Tesla|TITAN|RTX\s?\d{4}|GTX\s?\d{3,4}|A100|H100|H200|V100|"
                              r"A6000|A40|L40S?|T4|P100|K80)\b")),
    ("nightly", re.compile(r"\bnightly\b|\.dev20\d{6}", re.I)),
)
# Words one of which a clue's line must hold (lower case): a clue's pattern runs only where one occurs.
KEYWORDS = {
    "windows": (":\\", "win", "powershell"), "wsl1": ("wsl",), "wsl": ("wsl", "microsoft-standard", "/mnt/"),
    "macos": ("mac", "os x", "osx", "darwin", "/users/"),
    "apple_silicon": ("apple", "macbook", "m1", "m2", "m3", "m4", "mac m"),
    "rocm": ("rocm", "hiperr", "amd "), "colab": ("colab",),
    "no_gpu": ("gpu", "graphics", "nvidia card", "vps", "virtual", "intel", "nvidia devices found", "cpu"),
    "scheduler": ("slurm", "sbatch", "srun", "qsub", "pbs", "lsf", "bsub"), "gpu_requested": ("--gres", "--gpus", "-g"),
    "container": ("docker", "container", "nerdctl", "podman", "kube", "k8s", "k3s", "compose", "singularity",
                  "apptainer", "gke", "eks", "aks", "lxd", "lxc", "pod", ".dockerenv", "容器", "コンテナ", "컨테이너",
                  "контейнер"),
    "container_gpu_request": ("nvidia.com/gpu", "runtimeclassname", "runtime:", "--gpus", "--runtime", "driver:",
                              "gpu-enabled", "gpu enabled"),
    "one_gpu": ("one", "1 gpu", "single", "只有一", "一张", "一块", "only"),
    "other_gpu": ("amd", "radeon", "rx", "arc", "xpu", "dg2", "intel"),
    "jetson": ("jetson", "jetpack", "l4t", "orin", "xavier", "tegra"),
    "aarch64": ("aarch64", "arm64", "sbsa", "grace", "gh200", "gb200"),
    "compose_gpu": ("capabilities:",), "smi_cuda_na": ("n/a",), "smi_ok": ("nvidia-smi",),
    "nvidia_gpu": ("geforce", "quadro", "tesla", "titan", "rtx", "gtx", "a100", "h100", "h200", "v100", "a6000",
                   "a40", "l40", "t4", "p100", "k80"),
    "nightly": ("nightly", ".dev20"),
}
_CAPS_RE = re.compile(r"(?:--gpus\s{1,3}['\"]?|,)capabilities=(?P<caps>[a-z,]{1,60})|"
                      r"capabilities:\s{0,3}\[(?P<list>[^\]]{0,80})\]")
_KNOWN_CAPS = ("compute", "utility", "graphics", "video", "display", "compat32", "all", "gpu")


def read(b: Builder, lines: list[Line], report: Text | None = None) -> None:
    # The first line that holds each clue is its evidence. A prompt says where a line was typed
    # ('PS C:\\Users\\me>', '(env) u@host:~$'): it is read too.
    report = report or Text(lines)
    for name, pattern in CLUES:
        found = report.first(KEYWORDS[name], pattern)
        if found is not None and name not in b.clues:
            b.clue(name, found)
    # torch's words for a CPU-only build, as the catalogue has them, in any letter case (users retype them).
    cpu_only = lookup.entry("torch.not_compiled").patterns[0].anchor.lower()
    hit = next((lines[i] for i in report.holding((cpu_only,))), None)
    if hit is not None:
        b.clue("not_compiled", hit)
    for line in lines:
        text = line.text
        if "capabilities" not in text:
            continue
        caps = _CAPS_RE.search(text)
        if caps:
            given = caps.group("caps") or ",".join(c.strip(" '\"") for c in (caps.group("list") or "").split(","))
            value = ",".join(c for c in given.split(",") if c in _KNOWN_CAPS)
            if b.put("visibility.nvidia_driver_capabilities", value, line):
                b.note(f"line {line.number}: the container asks for driver capabilities '{value}'"
                       + ("" if any(c in value.split(",") for c in ("compute", "all")) else
                          ": without 'compute' it gets no libcuda, so CUDA cannot start"))
    _set_os(b)


def _set_os(b: Builder) -> None:
    """host.os from the clues when the report does not state it: macOS, then Linux under WSL, then Windows."""
    if "colab" in b.clues:
        return  # a Colab notebook runs on Google's Linux runtime, whatever machine its browser is on
    for clue, system, why in (("apple_silicon", "Darwin", "Apple Silicon is named"),
                              ("macos", "Darwin", "macOS is named"),
                              ("wsl", "Linux", "WSL runs Linux"),
                              ("windows", "Windows", "a Windows path or name")):
        if clue in b.clues:
            number, raw = b.clues[clue]
            b.infer("host.os", system, Line(number, raw, raw), why)
            return
