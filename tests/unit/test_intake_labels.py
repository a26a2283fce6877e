"""Labels in any spelling and language name the same field; several environments in one report are told apart."""

from __future__ import annotations

import pytest

from harness.intake import environments, labels
from harness.intake.normal import normalise


@pytest.mark.parametrize(("label", "field"), [
    ("PyTorch Version", "torch_version"), ("torch版本", "torch_version"), ("Версия PyTorch", "torch_version"),
    ("Versão do PyTorch", "torch_version"), ("PyTorch のバージョン", "torch_version"), ("**Pytorch**", "torch_version"),
    ("CUDA used to build PyTorch", "cuda_built"), ("编译 PyTorch 所用的 CUDA", "cuda_built"),
    ("CUDA usada para compilar PyTorch", "cuda_built"),
    ("Is CUDA available", "cuda_available"), ("CUDA 是否可用", "cuda_available"), ("Доступна ли CUDA", "cuda_available"),
    ("Nvidia driver version", "driver"), ("驱动版本", "driver"), ("Versión del controlador", "driver"),
    ("GPU", "gpus"), ("GPU models and configuration", "gpus"), ("显卡型号", "gpus"), ("Placa de vídeo", "gpus"),
    ("Видеокарта", "gpus"), ("CUDA runtime version", "nvcc"), ("Python version", "python"), ("Python 版本", "python"),
    ("Python platform", "python_platform"), ("OS", "os"), ("操作系统", "os"), ("Sistema operativo", "os"),
    ("CUDA Version", "cuda"), ("CUDA/cuDNN version", "cuda"),
    ("Motherboard", None), ("How you installed it", None), ("Is debug build", None), ("GCC version", None),
])
def test_a_label_names_its_field_in_any_language(label: str, field: str | None) -> None:
    assert labels.field_of(label) == field


@pytest.mark.parametrize(("word", "answer"), [("True", True), ("yes", True), ("是", True), ("はい", True),
                                               ("Да", True), ("Sí", True), ("False", False), ("否", False),
                                               ("нет", False), ("não", False), ("maybe", None), ("", None)])
def test_yes_and_no_in_any_language(word: str, answer: bool | None) -> None:
    assert labels.yes_no(word) == answer


def names(text: str) -> list[str]:
    return [env.name for env in environments.split(normalise(text))]


def test_two_pythons_are_two_environments() -> None:
    text = ("/opt/a/lib/python3.8/site-packages/torch/cuda/__init__.py:52: UserWarning: x\n\n"
            "More of the first.\n\n"
            "/opt/b/lib/python3.11/site-packages/torch/cuda/__init__.py:129: UserWarning: y\n")
    assert names(text) == ["Python 3.8", "Python 3.11"]


def test_the_same_torch_again_is_the_same_environment() -> None:
    text = ("pytorch   1.3.1   cuda100py37h53c1284_0\nworks\npytorch   1.4.0   py3.7_cpu_0\nbroken\n"
            "PyTorch version: 1.3.1\n")
    envs = environments.split(normalise(text))
    assert [e.name for e in envs] == ["torch 1.3.1", "torch 1.4.0"]
    assert envs[0].lines == (0, 1, 4) and envs[1].lines == (2, 3)


def test_a_launcher_splits_and_the_preamble_is_kept_apart() -> None:
    text = ('(title: no GPU in the job)\npython -c "import torch; print(torch.cuda.is_available())"\n# True\n'
            'srun python -c "import torch; print(torch.cuda.is_available())"\n# False\n')
    envs = environments.split(normalise(text))
    assert [e.name for e in envs] == ["run directly", "run under srun"]
    assert envs[0].preamble == (0,) and envs[1].lines == (3, 4)


def test_one_environment_is_not_split() -> None:
    text = ("(env) $ python train.py\n/home/u/env/lib/python3.10/site-packages/torch/x.py: warning\n"
            "PyTorch version: 2.4.0+cu121\n")
    assert len(environments.split(normalise(text))) == 1


def test_a_log_that_switches_at_every_line_is_one_environment() -> None:
    text = "".join(f"/e{i % 2}/lib/python3.{8 + i % 2}/site-packages/m.py: line {i}\n" for i in range(100))
    assert len(environments.split(normalise(text))) == 1
