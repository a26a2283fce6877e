"""parse_collect_env on the variants users paste: quoting, fences, hints, other formats and messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.intake import parse_collect_env

DATA = Path(__file__).resolve().parents[1] / "data" / "collect_env"
REAL = (DATA / "too-old-driver_cu121-on-r470.txt").read_text(encoding="utf-8")

# The modern field order (torch 2.4's collect_env), values chosen per test.
BASE = {
    "PyTorch version": "2.4.1+cu121",
    "Is debug build": "False",
    "CUDA used to build PyTorch": "12.1",
    "ROCM used to build PyTorch": "N/A",
    "OS": "Ubuntu 22.04.4 LTS (x86_64)",
    "Python version": "3.10.12 (main, Jul 29 2024, 16:56:48) [GCC 11.4.0] (64-bit runtime)",
    "Python platform": "Linux-6.5.0-45-generic-x86_64-with-glibc2.35",
    "Is CUDA available": "True",
    "CUDA runtime version": "Could not collect",
    "GPU models and configuration": "GPU 0: NVIDIA A100-SXM4-80GB",
    "Nvidia driver version": "535.183.01",
    "cuDNN version": "Could not collect",
}


def dump(libraries: tuple[str, ...] = ("[pip3] torch==2.4.1", "[conda] Could not collect"), **fields: str) -> str:
    """A collect_env output with BASE's fields, some replaced (key with '_' for ' ') or removed (value '-')."""
    values = dict(BASE)
    for key, value in fields.items():
        name = next((k for k in values if k.replace(" ", "_").lower() == key.lower()), key.replace("_", " "))
        values[name] = value
    lines = ["Collecting environment information..."]
    lines += [f"{k}: {v}" for k, v in values.items() if v != "-"]
    lines += ["", "Versions of relevant libraries:", *libraries]
    return "\n".join(lines) + "\n"


def get(facts: Any, path: str) -> Any:
    node = facts
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def test_quoting_fences_crlf_colours_and_indent_change_nothing() -> None:
    plain = parse_collect_env(REAL).facts
    quoted = "\r\n".join("> " + line for line in REAL.splitlines())
    assert parse_collect_env(quoted).facts == plain
    nested = "\n".join(">> " + line for line in REAL.splitlines())
    assert parse_collect_env(nested).facts == plain
    indented = "\n".join("    " + line for line in REAL.splitlines())
    assert parse_collect_env(indented).facts == plain
    coloured = REAL.replace("Is CUDA available: False", "\x1b[1mIs CUDA available:\x1b[0m False")
    assert parse_collect_env(coloured).facts == plain
    bom = "\ufeff" + REAL
    assert parse_collect_env(bom).facts == plain


def test_key_line_provenance_keeps_the_raw_quoted_text() -> None:
    quoted = "\n".join("> " + line for line in dump().splitlines())
    report = parse_collect_env(quoted)
    assert report.provenance["driver.nvml.driver_version"] == (12, "> Nvidia driver version: 535.183.01")


def test_multi_gpu_block_with_uuids_and_mig() -> None:
    text = dump(GPU_models_and_configuration="").replace(
        "GPU models and configuration: \n",
        "GPU models and configuration: \nGPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5d4e3c2b-1a09-4f8e-9d7c-6b5a4e3d2c1b)\n"
        "  MIG 3g.40gb     Device  0:\nGPU 1: NVIDIA A100-SXM4-80GB\n\n")
    facts = parse_collect_env(text)
    devices = get(facts.facts, "driver.nvml.devices")
    assert devices == [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-5d4e3c2b-1a09-4f8e-9d7c-6b5a4e3d2c1b"},
                       {"index": 1, "name": "NVIDIA A100-SXM4-80GB"}]
    assert any("MIG instances are configured (MIG 3g.40gb Device 0)" in n for n in facts.notes)
    assert facts.provenance["driver.nvml.devices.1"][1] == "GPU 1: NVIDIA A100-SXM4-80GB"


def test_old_format_yes_no_bare_version_and_full_width_colon() -> None:
    text = ("PyTorch version 1.5.0\nIs debug build: No\nCUDA used to build PyTorch: 10.2\n\nOS: Ubuntu 18.04.3 LTS\n"
            "Python version: 3.6\nIs CUDA available: No\nCUDA runtime version: 10.0.130\n"
            "GPU models and configuration:\nGPU 0\uff1a Tesla P100-PCIE-16GB\nGPU 1\uff1a Tesla P100-PCIE-16GB\n\n"
            "Nvidia driver version: 410.104\n")
    facts = parse_collect_env(text).facts
    assert get(facts, "torch.version") == "1.5.0"
    assert get(facts, "torch.is_available") is False
    assert [d["name"] for d in get(facts, "driver.nvml.devices")] == ["Tesla P100-PCIE-16GB"] * 2
    assert get(facts, "host.os") == "Linux" and get(facts, "host.python") == "3.6"


def test_version_label_alone_and_its_conflicts() -> None:
    label_only = parse_collect_env(dump(PyTorch_version="2.3.0+cu118", CUDA_used_to_build_PyTorch="-"))
    assert get(label_only.facts, "torch.cuda") == "11.8"
    assert any("read from the version label alone" in n for n in label_only.notes)
    cpu_label = parse_collect_env(dump(PyTorch_version="2.3.0+cpu", CUDA_used_to_build_PyTorch="-"))
    assert get(cpu_label.facts, "torch.cuda") is None and "torch.cuda" in cpu_label.provenance
    conflict = parse_collect_env(dump(PyTorch_version="2.3.0+cu121", CUDA_used_to_build_PyTorch="11.8"))
    assert get(conflict.facts, "torch.cuda") == "11.8"
    assert any("+cu121 disagrees" in n for n in conflict.notes)


def test_torch_not_importable() -> None:
    report = parse_collect_env(dump(PyTorch_version="N/A", CUDA_used_to_build_PyTorch="N/A", Is_CUDA_available="N/A"))
    assert get(report.facts, "torch.importable") is False
    assert get(report.facts, "torch.version") is None and get(report.facts, "torch.is_available") is None


def test_two_pasted_dumps_read_the_first() -> None:
    report = parse_collect_env(dump() + "\n" + dump(Nvidia_driver_version="550.54.15"))
    assert get(report.facts, "driver.nvml.driver_version") == "535.183.01"
    assert any("holds 2 collect_env outputs" in n for n in report.notes)


def test_macos_and_wsl_hosts() -> None:
    mac = parse_collect_env(dump(PyTorch_version="2.4.1", CUDA_used_to_build_PyTorch="None", OS="macOS 14.4.1 (arm64)",
                                 Python_platform="macOS-14.4.1-arm64-arm-64bit", Is_CUDA_available="False",
                                 GPU_models_and_configuration="Could not collect",
                                 Nvidia_driver_version="Could not collect"))
    assert get(mac.facts, "host.os") == "Darwin" and get(mac.facts, "host.machine") == "arm64"
    assert get(mac.facts, "driver.nvidia_smi.works") is None  # collect_env does not ask nvidia-smi on macOS
    wsl = parse_collect_env(dump(Python_platform="Linux-5.15.153.1-microsoft-standard-WSL2-x86_64-with-glibc2.35",
                                 Nvidia_driver_version="546.33"))
    assert get(wsl.facts, "host.os") == "Linux"
    assert any(n.startswith("WSL:") for n in wsl.notes)


def test_environment_hints() -> None:
    text = dump() + "\n".join([
        "$ export CUDA_VISIBLE_DEVICES=1",
        'os.environ["NVIDIA_VISIBLE_DEVICES"] = "GPU-5d4e3c2b"',
        "PS> $env:NVIDIA_DRIVER_CAPABILITIES='utility'",
        "CUDA_DEVICE_ORDER=PCI_BUS_ID PYTORCH_NVML_BASED_CUDA_CHECK=1 python train.py",
        "if CUDA_VISIBLE_DEVICES == '7': pass",
    ])
    facts = parse_collect_env(text).facts
    assert get(facts, "visibility.cuda_visible_devices") == "1"
    assert get(facts, "visibility.nvidia_visible_devices") == "GPU-5d4e3c2b"
    assert get(facts, "visibility.nvidia_driver_capabilities") == "utility"
    assert get(facts, "visibility.cuda_device_order") == "PCI_BUS_ID"
    assert get(facts, "torch.nvml_based_check") is True


def test_docker_run_split_over_lines() -> None:
    with_gpus = parse_collect_env("$ docker run --rm \\\n    --gpus all \\\n    img:1 python -m torch.utils.collect_env\n"
                                  + dump())
    assert get(with_gpus.facts, "visibility.in_container") is True
    assert get(with_gpus.facts, "visibility.container_evidence") == "`docker run` with GPU access requested"
    without = parse_collect_env("sudo docker run -it -e NVIDIA_VISIBLE_DEVICES=all img:1 bash\n" + dump())
    assert get(without.facts, "visibility.container_evidence") == "`docker run` without --gpus"
    assert get(without.facts, "visibility.nvidia_visible_devices") == "all"


def test_repl_answers() -> None:
    text = dump(Is_CUDA_available="-") + ">>> torch.cuda.is_available()\nFalse\n>>> torch.cuda.device_count()\n2\n"
    facts = parse_collect_env(text).facts
    assert get(facts, "torch.is_available") is False and get(facts, "torch.device_count") == 2
    disagree = parse_collect_env(dump() + "In [3]: torch.cuda.is_available()\nOut[3]: False\n")
    assert get(disagree.facts, "torch.is_available") is True  # the dump's own line wins
    assert any("unlike line" in n for n in disagree.notes)


def test_nvidia_smi_header() -> None:
    text = ("| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |\n"
            + dump(Nvidia_driver_version="Could not collect"))
    facts = parse_collect_env(text).facts
    assert get(facts, "driver.nvml.driver_version") == "535.104.05"
    assert get(facts, "driver.nvml.cuda_driver_version") == 12020
    assert get(facts, "driver.nvidia_smi.works") is True


def test_nvml_and_smi_failures() -> None:
    unknown = parse_collect_env("Failed to initialize NVML: Unknown Error\n" + dump())
    assert get(unknown.facts, "driver.nvml.init_error") == "Unknown Error"
    assert get(unknown.facts, "driver.nvml.init_error_code") == 999
    cli = parse_collect_env("docker: Error response from daemon: failed to create task: nvidia-container-cli: "
                            "initialization error: nvml error: driver/library version mismatch\n" + dump())
    assert get(cli.facts, "driver.nvml.init_error") == "Driver/library version mismatch"
    assert get(cli.facts, "driver.nvml.init_error_code") == 18
    torch_words = parse_collect_env("UserWarning: Can't initialize NVML\n" + dump())
    assert get(torch_words.facts, "driver.nvml.init_error") == "Can't initialize NVML"
    assert get(torch_words.facts, "driver.nvml.loaded") is True
    smi = parse_collect_env("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
                            "that the latest NVIDIA driver is installed and running.\n"
                            + dump(Nvidia_driver_version="Could not collect"))
    assert get(smi.facts, "driver.nvidia_smi.works") is False
    assert get(smi.facts, "driver.nvidia_smi.output").startswith("NVIDIA-SMI has failed because")


def test_init_messages_warned_raised_and_quoted_in_tracebacks() -> None:
    unknown = parse_collect_env("x.py:1: UserWarning: CUDA initialization: CUDA unknown error - this may be due to an "
                                "incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after "
                                "program start. Setting the available devices to be zero. (Triggered internally at "
                                "../c10/cuda/CUDAFunctions.cpp:109.)\n" + dump())
    warning = get(unknown.facts, "torch.init_warning")
    assert warning.startswith("CUDA unknown error") and warning.endswith("to be zero.")
    assert get(unknown.facts, "driver.libcuda.cuinit") is None  # torch's words, not a cuInit probe
    assert get(unknown.facts, "visibility.cuda_visible_devices") is None
    source_only = parse_collect_env('    raise AssertionError("Torch not compiled with CUDA enabled")\n' + dump())
    assert get(source_only.facts, "torch.init_error") is None
    old = parse_collect_env("AssertionError: \nThe NVIDIA driver on your system is too old (found version 9010).\n"
                            + dump())
    assert get(old.facts, "torch.init_error") == "The NVIDIA driver on your system is too old (found version 9010)."
    assert get(old.facts, "driver.libcuda.driver_version") == 9010


def test_old_capability_warning() -> None:
    text = ("UserWarning: Found GPU0 GeForce GTX 770 which is of cuda capability 3.0.\n"
            "    PyTorch no longer supports this GPU because it is too old.\n"
            + dump(GPU_models_and_configuration="GPU 0: GeForce GTX 770"))
    facts = parse_collect_env(text).facts
    assert get(facts, "torch.devices") == [{"index": 0, "name": "GeForce GTX 770", "compute_capability": "3.0"}]
    assert get(facts, "driver.nvml.devices")[0]["compute_capability"] == "3.0"


def test_runtime_estimate_only_where_honest() -> None:
    def cudart(version: str, cuda: str, package: str, **more: str) -> Any:
        text = dump(libraries=(f"[pip3] {package}", "[conda] Could not collect"), PyTorch_version=version,
                    CUDA_used_to_build_PyTorch=cuda, **more)
        return get(parse_collect_env(text).facts, "torch.cudart_version")

    assert cudart("2.4.1+cu121", "12.1", "nvidia-cuda-runtime-cu12==12.4.127") == 12040  # pip upgraded the minor
    assert cudart("2.0.1", "11.7", "nvidia-cuda-runtime-cu11==11.7.99") is None  # before 2.1
    assert cudart("2.4.1", "12.1", "nvidia-cuda-runtime-cu11==11.8.89") is None  # another major
    assert cudart("2.4.1", "12.1", "nvidia-cuda-runtime-cu12==12.1.105",
                  Python_platform="Windows-10-10.0.22631-SP0") is None  # Windows wheels bundle theirs


def test_conda_lines() -> None:
    text = dump(libraries=("[pip3] numpy==1.26.4", "[conda] cuda-cudart               12.1.105             0    nvidia",
                           "[conda] pytorch                   2.1.0           py3.10_cuda12.1_cudnn8.9.2_0    pytorch",
                           "[conda] torch                     2.0.1           pypi_0    pypi"),
                PyTorch_version="2.1.0", CUDA_used_to_build_PyTorch="12.1")
    report = parse_collect_env(text)
    assert get(report.facts, "torch.cuda_runtime_package") == "cuda-cudart 12.1.105"
    assert get(report.facts, "torch.cudart_version") is None
    notes = "\n".join(report.notes)
    assert "torch comes from conda, built for CUDA 12.1" in notes
    assert "pip lists torch 2.0.1 while torch reports 2.1.0" in notes
