"""The masked loss: PAD positions ignored, label smoothing, clear shape errors; perplexity."""
import math

import pytest
import torch

from course_utils.loss import masked_nll_loss, perplexity
from course_utils.vocab import PAD_ID


def test_masked_loss_is_the_mean_over_real_tokens_only():
    torch.manual_seed(0)
    log_probs = torch.randn(2, 4, 7).log_softmax(-1)  # (B, T, V)
    tgt = torch.tensor([[5, 6, 2, PAD_ID], [4, 2, PAD_ID, PAD_ID]])
    expected = -(log_probs[0, 0, 5] + log_probs[0, 1, 6] + log_probs[0, 2, 2] + log_probs[1, 0, 4]
                 + log_probs[1, 1, 2]) / 5
    torch.testing.assert_close(masked_nll_loss(log_probs, tgt), expected)


def test_changing_predictions_at_pad_positions_changes_nothing():
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 7, requires_grad=True)
    tgt = torch.tensor([[5, 6, 2, PAD_ID], [4, 2, PAD_ID, PAD_ID]])
    loss = masked_nll_loss(logits.log_softmax(-1), tgt)
    loss.backward()
    assert (logits.grad[tgt == PAD_ID] == 0).all()  # no gradient flows from padding
    changed = logits.detach().clone()
    changed[tgt == PAD_ID] = torch.randn(3, 7) * 10
    torch.testing.assert_close(masked_nll_loss(changed.log_softmax(-1), tgt), loss.detach())


def test_label_smoothing_keeps_pads_ignored_and_reduces_to_nll_at_zero():
    torch.manual_seed(0)
    log_probs = torch.randn(2, 3, 6).log_softmax(-1)
    tgt = torch.tensor([[5, 2, PAD_ID], [4, 2, PAD_ID]])
    torch.testing.assert_close(masked_nll_loss(log_probs, tgt, label_smoothing=0.0),
                               masked_nll_loss(log_probs, tgt))
    smoothed = masked_nll_loss(log_probs, tgt, label_smoothing=0.2)
    changed = log_probs.clone()
    changed[:, 2] = torch.randn(2, 6).log_softmax(-1)
    torch.testing.assert_close(masked_nll_loss(changed, tgt, label_smoothing=0.2), smoothed)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_label_smoothing_is_pytorchs_label_smoothed_cross_entropy(reduction):
    torch.manual_seed(0)
    log_probs = torch.randn(3, 4, 9).log_softmax(-1)
    tgt = torch.tensor([[5, 2, PAD_ID, PAD_ID], [4, 6, 7, 2], [3, 2, PAD_ID, PAD_ID]])
    expected = torch.nn.functional.cross_entropy(log_probs.reshape(12, 9), tgt.reshape(12), ignore_index=PAD_ID,
                                                 reduction=reduction, label_smoothing=0.1)
    torch.testing.assert_close(masked_nll_loss(log_probs, tgt, reduction=reduction, label_smoothing=0.1), expected)


def test_label_smoothing_reads_the_log_probs_as_they_are():
    """No second log_softmax (cross_entropy on log-probabilities would re-normalise them, a full (B*T, V) pass)."""
    log_probs = torch.randn(2, 3, 6).log_softmax(-1).requires_grad_()
    loss = masked_nll_loss(log_probs, torch.tensor([[5, 2, PAD_ID], [4, 2, PAD_ID]]), label_smoothing=0.1)
    nodes, seen = [loss.grad_fn], set()
    while nodes:
        node = nodes.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        assert "LogSoftmax" not in type(node).__name__
        nodes.extend(next_node for next_node, _ in node.next_functions)


def test_masked_loss_names_shape_problems():
    with pytest.raises(ValueError, match=r"\(B, T, V\)"):
        masked_nll_loss(torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))


def test_perplexity_is_exp_of_the_mean_nll_and_does_not_overflow():
    assert perplexity(math.log(7.0)) == pytest.approx(7.0)
    assert math.isfinite(perplexity(1e6))


def test_smoothed_targets_is_pytorchs_target_distribution():
    from course_utils.loss import smoothed_targets

    torch.manual_seed(0)
    log_probs = torch.randn(2, 4, 9).log_softmax(-1)  # (B, T, V)
    tgt = torch.tensor([[5, 2, PAD_ID, PAD_ID], [4, 6, 7, 2]])
    q = smoothed_targets(tgt, 9, 0.1)  # (B, T, V)
    real = tgt != PAD_ID
    torch.testing.assert_close(q.sum(-1), real.float())  # rows sum to 1; pads are all 0
    assert q[0, 0, 5] == pytest.approx(0.9 + 0.1 / 9) and q[0, 0, 3] == pytest.approx(0.1 / 9)
    by_hand = -(q * log_probs).sum() / real.sum()
    expected = torch.nn.functional.cross_entropy(log_probs.reshape(8, 9), tgt.reshape(8), ignore_index=PAD_ID,
                                                 label_smoothing=0.1)
    torch.testing.assert_close(by_hand, expected)
    torch.testing.assert_close(by_hand, masked_nll_loss(log_probs, tgt, label_smoothing=0.1))
    torch.testing.assert_close(smoothed_targets(tgt, 9, 0.0), torch.nn.functional.one_hot(tgt, 9) * real[..., None]
                               * 1.0)
    with pytest.raises(ValueError, match="label_smoothing"):
        smoothed_targets(tgt, 9, 1.5)
