"""The lab's torch side: the ONNX graphs of a GRU translator, the reference decoding with edits, and the check that
onnxruntime runs the graphs as PyTorch runs the model (tools.site.lab uses them; imported only when exporting)."""
from __future__ import annotations

import warnings
from pathlib import Path

import torch
from torch import Tensor, nn

from tools.site.lab import OPSET, TOLERANCE, LabError

__all__ = ["decode_with_edits", "export_graphs", "check_graphs"]


# ------------------------------------------------------------------------------------------ the reference decoding
@torch.no_grad()
def decode_with_edits(model, src_ids: list[int], edits: dict[int, list[float]] | None = None
                      ) -> tuple[list[int], Tensor]:
    """Greedy decoding of one sentence (as `search.greedy_decode`: PAD and SOS never chosen, EOS ends, the default
    length cap) where at each step t in `edits` the given weights (S floats) replace the scorer's:
    `decoder.step(prev, state, memory, weights=...)`. Returns the output ids and the weights (T, S) used."""
    from course_utils.runtime import eval_mode
    from course_utils.search import default_max_steps, forbid_special_tokens
    from course_utils.vocab import EOS_ID, SOS_ID

    edits = edits or {}
    src = torch.tensor([src_ids])  # (1, S)
    lengths = torch.tensor([len(src_ids)])
    cap = int(default_max_steps(lengths)[0])
    with eval_mode(model):
        memory, state = model.encode(src, lengths)
        prev, ids, rows = torch.tensor([SOS_ID]), [], []
        for t in range(cap):
            given = torch.tensor([edits[t]], dtype=torch.float32) if t in edits else None  # (1, S)
            step = model.decoder.step(prev, state, memory, weights=given)
            token = int(forbid_special_tokens(step.log_probs).argmax(dim=-1))
            ids.append(token)
            rows.append(step.weights[0])
            if token == EOS_ID:
                break
            prev, state = torch.tensor([token]), step.state
    return ids, torch.stack(rows)  # (T, S)


# ------------------------------------------------------------------------------------------------- the graphs
class _EncoderGraph(nn.Module):
    """One sentence src (1, S) -> the memory (keys, [projected keys]) and the decoder's first state."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.has_projection = model.decoder.prepare_memory(*_probe_memory(model)).projected_keys is not None
        self.has_feed = model.decoder.init_state(torch.zeros(1, model.decoder.hidden_size)).input_feed is not None

    def forward(self, src: Tensor):
        lengths = torch.full((1,), src.shape[1], dtype=torch.long)
        # one sentence fills its row: the unpacked GRU reads exactly what the packed one reads (checked on export)
        encoded = self.model.encoder(src, lengths, packed=False)
        memory = self.model.decoder.prepare_memory(encoded.outputs, torch.ones_like(src, dtype=torch.bool))
        state = self.model.decoder.init_state(encoded.final)
        outputs = [memory.keys] + ([memory.projected_keys] if self.has_projection else [])
        return tuple(outputs + [state.hidden] + ([state.input_feed] if self.has_feed else []))


class _StepGraph(nn.Module):
    """One decoder step: the scorer's weights, or `given` where use_given is 1, then decoder.step with them."""

    def __init__(self, model, has_projection: bool, has_feed: bool):
        super().__init__()
        self.decoder, self.has_projection, self.has_feed = model.decoder, has_projection, has_feed

    def forward(self, *inputs: Tensor):
        from course_utils.decoder import DecoderState, Memory

        inputs = list(inputs)
        prev, hidden = inputs.pop(0), inputs.pop(0)
        feed = inputs.pop(0) if self.has_feed else None
        keys = inputs.pop(0)
        projected = inputs.pop(0) if self.has_projection else None
        given, use_given = inputs
        memory = Memory(keys, torch.ones(keys.shape[:2], dtype=torch.bool), projected)
        state = DecoderState(hidden, feed)
        own = self.decoder.step(prev, state, memory).weights  # (1, S) the scorer's
        weights = torch.where(use_given.unsqueeze(1) > 0.5, given, own)  # (1, S)
        out = self.decoder.step(prev, state, memory, weights=weights)
        return tuple([out.log_probs, out.state.hidden] + ([out.state.input_feed] if self.has_feed else [])
                     + [out.weights])


def _probe_memory(model) -> tuple[Tensor, Tensor]:
    return torch.zeros(1, 3, model.decoder.key_size), torch.ones(1, 3, dtype=torch.bool)


def _names(has_projection: bool, has_feed: bool) -> dict[str, list[str]]:
    memory = ["keys"] + (["projected_keys"] if has_projection else [])
    state = ["hidden"] + (["input_feed"] if has_feed else [])
    return {"memory": memory, "state": state,
            "encoder_inputs": ["src"], "encoder_outputs": memory + state,
            "step_inputs": ["prev_token"] + state + memory + ["given", "use_given"],
            "step_outputs": ["log_probs"] + [f"next_{n}" for n in state] + ["weights"]}


def export_graphs(model, folder: Path) -> dict[str, list[str]]:
    """Write folder/encoder.onnx and folder/step.onnx; returns their input and output names."""
    encoder = _EncoderGraph(model).eval()
    names = _names(encoder.has_projection, encoder.has_feed)
    step = _StepGraph(model, encoder.has_projection, encoder.has_feed).eval()
    src = torch.tensor([[4, 5, 6, 2]])
    with torch.no_grad():
        encoded = encoder(src)
    memory = dict(zip(names["encoder_outputs"], encoded))
    step_args = ([torch.tensor([1])] + [memory[n] for n in names["state"]] + [memory[n] for n in names["memory"]]
                 + [torch.full((1, 4), 0.25), torch.zeros(1)])
    sequence = {1: "source_length"}
    dynamic = {"src": sequence, **{n: sequence for n in names["memory"] + ["given", "weights"]}}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on shape checks it turns into constants
        torch.onnx.export(encoder, (src,), str(folder / "encoder.onnx"), input_names=names["encoder_inputs"],
                          output_names=names["encoder_outputs"], opset_version=OPSET, dynamo=False,
                          dynamic_axes={n: sequence for n in ["src"] + names["memory"]})
        torch.onnx.export(step, tuple(step_args), str(folder / "step.onnx"), input_names=names["step_inputs"],
                          output_names=names["step_outputs"], opset_version=OPSET, dynamo=False,
                          dynamic_axes={n: axes for n, axes in dynamic.items() if n != "src"})
    return names


class _OrtTranslator:
    """The page's decoding loop in Python on onnxruntime (what lab.js does): the export's check."""

    def __init__(self, folder: Path, names: dict[str, list[str]], caps: list[int]):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        self.encoder = onnxruntime.InferenceSession(str(folder / "encoder.onnx"), options)
        self.step = onnxruntime.InferenceSession(str(folder / "step.onnx"), options)
        self.names, self.caps = names, caps

    def decode(self, src_ids: list[int], edits: dict[int, list[float]] | None = None):
        import numpy as np

        from course_utils.vocab import EOS_ID, PAD_ID, SOS_ID

        edits, names = edits or {}, self.names
        encoded = dict(zip(names["encoder_outputs"],
                           self.encoder.run(None, {"src": np.array([src_ids], dtype=np.int64)})))
        state = {n: encoded[n] for n in names["state"]}
        prev, ids, rows = SOS_ID, [], []
        for t in range(self.caps[len(src_ids)]):
            given = np.array([edits.get(t, [0.0] * len(src_ids))], dtype=np.float32)
            feeds = {"prev_token": np.array([prev], dtype=np.int64), **state,
                     **{n: encoded[n] for n in names["memory"]}, "given": given,
                     "use_given": np.array([1.0 if t in edits else 0.0], dtype=np.float32)}
            out = dict(zip(names["step_outputs"], self.step.run(None, feeds)))
            log_probs = out["log_probs"][0].copy()
            log_probs[[PAD_ID, SOS_ID]] = -np.inf
            token = int(np.argmax(log_probs))
            ids.append(token)
            rows.append(out["weights"][0])
            if token == EOS_ID:
                break
            prev, state = token, {n: out[f"next_{n}"] for n in names["state"]}
        return ids, np.stack(rows)


def check_graphs(model, folder: Path, names, caps, sentences: list[list[int]]) -> float:
    """Greedy decodings through the graphs against PyTorch's greedy_decode, and one edited step against
    decode_with_edits; raises LabError on any difference in the words or a weight off by more than TOLERANCE."""
    from course_utils.search import greedy_decode

    runner, worst = _OrtTranslator(folder, names, caps), 0.0
    for ids in sentences:
        reference = greedy_decode(model, torch.tensor([ids]), torch.tensor([len(ids)]))
        length = int(reference.lengths[0])
        expected, weights = reference.tokens[0, :length].tolist(), reference.attention[0, :length].numpy()
        got, got_weights = runner.decode(ids)
        if got != expected:
            raise LabError(f"onnxruntime decodes source ids {ids} as {got}, PyTorch as {expected}: the graphs differ")
        worst = max(worst, float(abs(got_weights - weights).max()))
    ids = sentences[0]
    edits = {min(1, caps[len(ids)] - 1): [1.0 if j == 0 else 0.0 for j in range(len(ids))]}  # read only word 0
    expected, weights = decode_with_edits(model, ids, edits)
    got, got_weights = runner.decode(ids, edits)
    if got != expected:
        raise LabError(f"with an edited step onnxruntime gives {got}, PyTorch {expected}: the step graph differs")
    worst = max(worst, float(abs(got_weights - weights.numpy()).max()))
    if worst > TOLERANCE:
        raise LabError(f"attention weights differ by {worst:.2e} between onnxruntime and PyTorch "
                       f"(allowed {TOLERANCE:g})")
    return worst
