"""The box-and-arrow layouts, as data, that `diagrams._diagram_spec` fills in from a forward pass.

Node: (key, text or module name, x, y, kind). Edge: (start, end, name, symbols, source row); the source row (module,
call, "inputs" | "outputs", i) names the traced tensor that gives the arrow its shape; footnotes have no arrow. A
module name in a node's text is replaced by the module's real sizes. Introduced in notebook 02.
"""
from __future__ import annotations

__all__ = ["SCORES", "layouts_for"]

SCORES = {"BahdanauAttention": "v tanh(W s + U k)", "DotAttention": "h . k", "GeneralAttention": "h W k",
          "ConcatAttention": "v tanh(W [h; k])", "ScaledDotAttention": "h . k / sqrt(K)",
          "ScaledGeneralAttention": "h W k / sqrt(K)"}  # the score, in words (h: the query, k: a key)

_ENCODER = dict(
    nodes=[("src", "src\ntoken ids", 0, 4, "input"), ("emb", "encoder.embedding", 3.2, 4, "module"),
           ("drop", "encoder.dropout", 7.0, 4, "module"), ("pack", "pack_padded\n_sequence", 10.2, 4, "op"),
           ("lengths", "src_lengths", 6.8, 5.8, "input"), ("gru", "encoder.gru", 10.2, 2, "module"),
           ("unpack", "pad_packed\n_sequence", 14.4, 2, "op"), ("keys", "keys\n(decoder memory)", 17.8, 2, "output"),
           ("cat", "cat final states\nof D directions", 10.2, 0, "op"),
           ("final", "$s_0$: decoder's\ninitial state", 17.8, 0, "output")],
    edges=[("src", "emb", "src", "B, S", ("encoder", 0, "inputs", 0)),
           ("lengths", "pack", "lengths", "B", ("encoder", 0, "inputs", 1)),
           ("emb", "drop", "", "B, S, E", ("encoder.embedding", 0, "outputs", 0)),
           ("drop", "pack", "", "B, S, E", ("encoder.dropout", 0, "outputs", 0)),
           ("pack", "gru", "data", "N, E", ("encoder.gru", 0, "inputs", 0)),
           ("gru", "unpack", "data", "N, K", ("encoder.gru", 0, "outputs", 0)),
           ("unpack", "keys", "outputs", "B, S, K", ("encoder", 0, "outputs", 0)),
           ("gru", "cat", "$h_n$", "D, B, H", ("encoder.gru", 0, "outputs", 2))],
    footnotes=[("batch_sizes", "S", ("encoder.gru", 0, "inputs", 1))])
_BRIDGE = dict(nodes=[("bridge", "encoder.bridge", 14.4, 0, "module")],
               edges=[("cat", "bridge", "", "B, K", ("encoder.bridge", 0, "inputs", 0)),
                      ("bridge", "final", "tanh", "B, H", ("encoder", 0, "outputs", 1))])
_NO_BRIDGE = dict(nodes=[], edges=[("cat", "final", "final", "B, H", ("encoder", 0, "outputs", 1))])
_MEMORY = [("keys", "encoder keys", 0, 8, "input"), ("mask", "mask", 0, 6.3, "input"),
           ("y", "previous word\nids", 0, 0.6, "input"), ("emb", "decoder.embedding", 3.6, 0.6, "module"),
           ("weights", "attention\nweights", 17.5, 7.2, "output")]
_STEPS = [("log_probs", "B, T, V", ("(model)", 0, "outputs", 0)), ("weights", "B, T, S", ("(model)", 0, "outputs", 1))]
_BAHDANAU = dict(
    nodes=_MEMORY + [("ukey", "decoder.attention.key_layer", 3.6, 9.4, "module"),
                     ("prev", "$s_{i-1}$: previous state\n($s_0$ from the encoder)", 0, 4, "input"),
                     ("attn", "decoder.attention", 8, 7.2, "module"), ("cat1", "cat [$Ey$; $c_i$]", 6.5, 2.6, "op"),
                     ("gru", "decoder.gru", 10, 4, "module"), ("cat2", "cat [$s_i$; $c_i$; $Ey$]", 13, 2.6, "op"),
                     ("pre", "decoder.pre_output", 13, 0.6, "module"), ("out", "decoder.out", 16.3, 0.6, "module"),
                     ("logp", "log p(next word)", 17.5, 2.6, "output")],
    edges=[("keys", "ukey", "keys", "B, S, K", ("decoder.attention.key_layer", 0, "inputs", 0)),
           ("ukey", "attn", "$Uk$, once per sentence", "B, S, A", ("decoder.attention.key_layer", 0, "outputs", 0)),
           ("keys", "attn", "keys", "B, S, K", ("decoder.attention", 0, "inputs", 1)),
           ("mask", "attn", "mask", "B, S", ("decoder.attention", 0, "inputs", 2)),
           ("prev", "attn", "query $s_{i-1}$", "B, H", ("decoder.attention", 0, "inputs", 0)),
           ("attn", "weights", "$a_i$", "B, S", ("decoder.attention", 0, "outputs", 1)),
           ("attn", "cat1", "context $c_i$", "B, K", ("decoder.attention", 0, "outputs", 0)),
           ("y", "emb", "$y_{i-1}$", "B", ("decoder.embedding", 0, "inputs", 0)),
           ("emb", "cat1", "$Ey$", "B, E", ("decoder.embedding", 0, "outputs", 0)),
           ("cat1", "gru", "", "B, 1, E+K", ("decoder.gru", 0, "inputs", 0)),
           ("prev", "gru", "$s_{i-1}$", "1, B, H", ("decoder.gru", 0, "inputs", 1)),
           ("gru", "cat2", "$s_i$", "1, B, H", ("decoder.gru", 0, "outputs", 1)),
           ("attn", "cat2", "$c_i$", "B, K", ("decoder.attention", 0, "outputs", 0)),
           ("emb", "cat2", "$Ey$", "B, E", ("decoder.embedding", 0, "outputs", 0)),
           ("cat2", "pre", "", "B, H+K+E", ("decoder.pre_output", 0, "inputs", 0)),
           ("pre", "out", "tanh", "B, H", ("decoder.out", 0, "inputs", 0)),
           ("out", "logp", "log_softmax", "B, V", ("decoder.out", 0, "outputs", 0))],
    footnotes=_STEPS)
_LUONG = dict(
    nodes=_MEMORY + [("prev", "$h_{t-1}$: previous state\n($h_0$ from the encoder)", 0, 4, "input"),
                     ("gru", "decoder.gru", 8.4, 4, "module"), ("attn", "decoder.attention", 8.4, 7.2, "module"),
                     ("cat2", "cat [$c_t$; $h_t$]", 12.4, 5.4, "op"), ("combine", "decoder.combine", 13.6, 3, "module"),
                     ("out", "decoder.out", 13.6, 0.6, "module"), ("logp", "log p(next word)", 18, 0.6, "output")],
    edges=[("keys", "attn", "keys", "B, S, K", ("decoder.attention", 0, "inputs", 1)),
           ("mask", "attn", "mask", "B, S", ("decoder.attention", 0, "inputs", 2)),
           ("y", "emb", "$y_{t-1}$", "B", ("decoder.embedding", 0, "inputs", 0)),
           ("prev", "gru", "$h_{t-1}$", "1, B, H", ("decoder.gru", 0, "inputs", 1)),
           ("gru", "attn", "query $h_t$", "B, H", ("decoder.attention", 0, "inputs", 0)),
           ("attn", "weights", "$a_t$", "B, S", ("decoder.attention", 0, "outputs", 1)),
           ("attn", "cat2", "context $c_t$", "B, K", ("decoder.attention", 0, "outputs", 0)),
           ("gru", "cat2", "$h_t$", "1, B, H", ("decoder.gru", 0, "outputs", 1)),
           ("cat2", "combine", "", "B, K+H", ("decoder.combine", 0, "inputs", 0)),
           ("combine", "out", "$\\tilde{h}_t$ = tanh", "B, H", ("decoder.out", 0, "inputs", 0)),
           ("out", "logp", "log_softmax", "B, V", ("decoder.out", 0, "outputs", 0))],
    footnotes=_STEPS)
_FEEDING = dict(nodes=[("cat1", "cat [$Ey$; $\\tilde{h}_{t-1}$]", 5.6, 2.2, "op")],
                edges=[("emb", "cat1", "$Ey$", "B, E", ("decoder.embedding", 0, "outputs", 0)),
                       ("cat1", "gru", "", "B, 1, E+H", ("decoder.gru", 0, "inputs", 0)),
                       ("combine", "cat1", "attentional state $\\tilde{h}_t$: input of step t+1", "B, H",
                        ("decoder.combine", 0, "outputs", 0))])
_NO_FEEDING = dict(nodes=[], edges=[("emb", "gru", "$Ey$", "B, 1, E", ("decoder.gru", 0, "inputs", 0))])


def layouts_for(part: str, attention: str, input_feeding: bool, bridge: bool) -> tuple[str, list[dict]]:
    """(title, layouts to merge in order) for the encoder, or for Bahdanau's or Luong's decoder step."""
    if part == "encoder":
        return "The encoder", [_ENCODER, _BRIDGE if bridge else _NO_BRIDGE]
    if attention == "bahdanau":
        return "One Bahdanau decoder step: attend with $s_{i-1}$, then step the GRU", [_BAHDANAU]
    title = (f"One Luong decoder step ({attention}): step the GRU, then attend with $h_t$"
             + (", with input feeding" if input_feeding else ""))
    return title, [_LUONG, _FEEDING if input_feeding else _NO_FEEDING]
