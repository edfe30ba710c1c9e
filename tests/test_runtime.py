"""runtime: the one fast-mode reader, device resolution, and an exception-safe eval mode."""
import pytest
import torch
from torch import nn

from course_utils import evaluate, search
from course_utils.runtime import _FAST_ENV, eval_mode, fast_mode, resolve_device


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), (" YES ", True), ("0", False),
                                             ("", False), ("no", False)])
def test_fast_mode_reads_course_fast(monkeypatch, value, expected):
    monkeypatch.setenv(_FAST_ENV, value)
    assert fast_mode() is expected


def test_fast_mode_is_off_without_the_variable(monkeypatch):
    monkeypatch.delenv(_FAST_ENV, raising=False)
    assert fast_mode() is False


def test_resolve_device():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize("device, message", [("bogus", "unknown device 'bogus'"), ("cuda:x", "unknown device"),
                                             ("meta", "cannot run")])
def test_resolve_device_refuses_unknown_names_in_one_line(device, message):
    with pytest.raises(ValueError, match=message) as error:
        resolve_device(device)
    assert "\n" not in str(error.value) and "--device cpu" in str(error.value)


@pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda")])
def test_resolve_device_refuses_cuda_where_there_is_none(monkeypatch, device):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="CUDA") as error:
        resolve_device(device)
    assert "\n" not in str(error.value) and "--device cpu" in str(error.value)
    assert resolve_device("auto") == torch.device("cpu")


@pytest.mark.parametrize("training", [True, False])
def test_eval_mode_restores_the_previous_mode_also_after_an_error(training):
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5)).train(training)
    with eval_mode(model) as inside:
        assert inside is model and not model.training and not model[1].training
    assert model.training is training
    with pytest.raises(RuntimeError, match="boom"):
        with eval_mode(model):
            raise RuntimeError("boom")
    assert model.training is training and model[1].training is training


def test_decoding_and_evaluation_use_the_one_eval_mode():
    """The 'eval, then restore' bookkeeping exists once: search and evaluate use runtime.eval_mode."""
    for module in (search, evaluate):
        assert module.eval_mode is eval_mode
        assert "was_training" not in open(module.__file__).read()
