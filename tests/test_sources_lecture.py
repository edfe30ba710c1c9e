"""Carton's lecture classifier (003 lines 859-938 of ../shared/seeds/) and its two bugs, against the course's.

The lecture's `AttentionClassifier` is built from the seed's own lines (their slide numbers stripped) on the stand-ins
notebook 08 names (Lightning's base class, torchmetrics' Accuracy, `masked_mean`) and run on a tiny batch: its second
pass runs the attender (line 58) and its sparsity term is a mean over the padding (line 55). Those tests skip where
the seeds are absent. The course's `classifier.AttentionClassifier` is pinned to the fixed behaviour on the same
batch, with or without the seeds: the predictor gets gradients, and the sparsity term is the mean gate over each
sentence's real words (not 0 for an unpadded sentence, as the lecture's is)."""
import json
import re
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F
from seeds import ROOT, seed_lines
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from course_utils.classifier import AttentionClassifier
from course_utils.vocab import PAD_ID

WORDS = torch.tensor([[4, 5, 6, 7], [8, 9, 10, PAD_ID], [11, 12, PAD_ID, PAD_ID]])  # (3, 4): row 0 unpadded
MASK = WORDS != PAD_ID  # (3, 4)
LABELS = torch.tensor([0, 1, 2])
VOCAB = 13
NOTEBOOK = ROOT / "notebooks" / "08_attention_classification.ipynb"
FIRST, LAST = 859, 938  # the class on the lecture's three slides: __init__ (two slides), then forward


def _lecture_code() -> list[str]:
    """The class's code lines as the slides print them, slide numbers stripped, forward indented into the class."""
    code, in_forward = [], False
    for line in seed_lines("003")[FIRST - 1:LAST]:
        if not re.match(r"\d+( |$)", line):  # slide furniture: fences, titles, blank lines
            continue
        text = re.sub(r"^\d+ ?", "", line)
        in_forward = in_forward or text.startswith("def forward")
        code.append("    " + text if in_forward and text.strip() else text)
    return code


def _stand_ins() -> dict:
    """What the slides use but do not define: as notebook 08 states them."""
    return {"torch": torch, "np": np, "pack_padded_sequence": pack_padded_sequence,
            "pad_packed_sequence": pad_packed_sequence,
            "pl": SimpleNamespace(LightningModule=torch.nn.Module),
            "Accuracy": lambda task, num_classes: None,
            "masked_mean": lambda x, mask: (x * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)}


def _lecture_model():
    namespace = _stand_ins()
    exec("\n".join(_lecture_code()), namespace)  # noqa: S102 - the lecture's own lines, from the seed
    torch.manual_seed(0)
    vectors = torch.randn(VOCAB, 8).numpy()  # (V, 8) float32
    return namespace["AttentionClassifier"](vectors, num_classes=3, learning_rate=1e-3, padding_id=PAD_ID,
                                            lstm_hidden_size=8)


# ---------------------------------------------------------------------------------------------- the lecture's code
def test_the_lecture_bug_1_its_predictor_never_runs():
    lecture = _lecture_model()
    lecture(y=LABELS, input_ids=WORDS)["loss"].backward()
    assert all(p.grad is None for p in lecture.predictor.parameters())  # line 58: self.attender again
    assert all(p.grad is not None for p in lecture.attender.parameters())


def test_the_lecture_bug_2_its_sparsity_term_is_a_mean_over_the_padding():
    lecture = _lecture_model()
    with torch.no_grad():
        alone = lecture(y=LABELS[:1], input_ids=WORDS[:1])  # unpadded: 0, whatever the weights
    assert alone["sparsity_loss"].item() == 0.0 and (alone["attention_mask"] > 0.1).all()
    out = lecture(y=LABELS, input_ids=WORDS)  # padded rows: only sigmoid(bias) enters (pad_packed wrote 0.0 there)
    padded_rows = (~MASK).any(dim=1).float().mean()
    torch.testing.assert_close(out["sparsity_loss"], torch.sigmoid(lecture.attender_output_layer.bias)[0] * padded_rows)
    out["sparsity_loss"].backward()
    moved = [name for name, p in lecture.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0]
    assert moved == ["attender_output_layer.bias"]  # no word's weight, no attender weight


def test_notebook_08_runs_the_lectures_lines():
    """The runnable copy in notebook 08 is the lecture's class line for line (comments, blank lines, indents aside)."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    [copy] = ["".join(c["source"]) for c in cells if "class CartonAttentionClassifier" in "".join(c["source"])]
    body = copy.split("class CartonAttentionClassifier", 1)[1].splitlines()[1:]
    lecture = [line for line in _lecture_code()[1:] if line.strip() and not line.strip().startswith("#")]
    assert [line.strip() for line in body if line.strip()] == [line.strip() for line in lecture]


# ---------------------------------------------------------------------------------------------- the course's fix
def _course_model() -> AttentionClassifier:
    torch.manual_seed(0)
    return AttentionClassifier(VOCAB, num_classes=3, embedding_size=8, hidden_size=8)


def test_the_course_classifier_trains_its_predictor():
    model = _course_model()
    F.cross_entropy(model(WORDS, MASK).logits, LABELS).backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.predictor.parameters())


def test_the_course_sparsity_term_is_the_mean_gate_over_each_sentences_words():
    model = _course_model()
    alone = model(WORDS[:1], MASK[:1])  # unpadded: the lecture's term is 0 here
    torch.testing.assert_close(alone.sparsity, alone.weights[0].mean())
    assert alone.sparsity.item() > 0.1
    out = model(WORDS, MASK)
    per_sentence = torch.stack([out.weights[b, :n].mean() for b, n in enumerate(MASK.sum(dim=1).tolist())])
    torch.testing.assert_close(out.sparsity, per_sentence.mean())
    out.sparsity.backward()  # the penalty reaches the attender, not only a bias
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.attender.parameters())
