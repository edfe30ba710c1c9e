"""What notebook 04 says about a widely read article's general score (Gabriel Loye, "Attention Mechanism",
FloydHub blog, 2019), checked against the package's GeneralAttention.

The article writes the score as W(H_encoder . H_decoder): a weight applied after query and key have met
coordinate by coordinate, i.e. q^T diag(w) k at best. Luong's general score is q^T W_a k with a full W_a. The
article's code, encoder_outputs.bmm(fc(decoder_hidden)), computes k^T (W q): Luong's score with W_a = W^T.
"""
import torch
from torch.testing import assert_close

from course_utils.attention import GeneralAttention, make_attention

B, S, K = 2, 5, 6


def _general(seed: int = 0) -> GeneralAttention:
    torch.manual_seed(seed)
    scorer = make_attention("general", K, K)
    assert isinstance(scorer, GeneralAttention)
    return scorer


def test_general_scores_a_key_that_shares_no_coordinate_with_the_query_unlike_the_articles_formula():
    scorer = _general()
    query = torch.zeros(1, 1, K)  # (B, T, H_q) along axis 0
    query[0, 0, 0] = 1.0
    key = torch.zeros(1, 1, K)  # (B, S, K) along axis 1
    key[0, 0, 1] = 1.0
    w_a = scorer.linear.weight.T  # (H_q, K)
    score = scorer.score(query, key, None)  # (1, 1, 1)
    assert score.item() == w_a[0, 1].item() != 0.0
    for seed in range(5):  # the article's formula gives 0 whatever its weights
        weights = torch.randn(K, generator=torch.Generator().manual_seed(seed))
        assert ((query * key) @ weights).abs().max().item() == 0.0


def test_the_articles_formula_is_general_with_a_diagonal_matrix():
    scorer = _general()
    torch.manual_seed(1)
    query, keys, weights = torch.randn(B, K), torch.randn(B, S, K), torch.randn(K)
    with torch.no_grad():
        scorer.linear.weight.copy_(torch.diag(weights))  # W_a := diag(w)
    formula = (query.unsqueeze(1) * keys) @ weights  # (B, S)
    assert_close(formula, scorer.score(query.unsqueeze(1), keys, None).squeeze(1))


def test_the_articles_general_code_equals_general_attention():
    scorer = _general()
    torch.manual_seed(2)
    query, keys = torch.randn(B, K), torch.randn(B, S, K)
    article = keys.bmm(scorer.linear(query).unsqueeze(-1)).squeeze(-1)  # encoder_outputs.bmm(fc(hidden)): (B, S)
    assert_close(article, scorer.score(query.unsqueeze(1), keys, None).squeeze(1))
    by_hand = torch.einsum("bh,hk,bsk->bs", query, scorer.linear.weight.T, keys)  # q^T W_a k
    assert_close(article, by_hand)


def test_a_full_general_matrix_is_not_any_diagonal_one():
    """Scores from a full W_a cannot be reproduced by W(q * k) for any w: fit w by least squares and miss."""
    scorer = _general()
    torch.manual_seed(3)
    query, keys = torch.randn(64, K), torch.randn(64, S, K)
    target = scorer.score(query.unsqueeze(1), keys, None).squeeze(1).detach().reshape(-1)  # (64 S,)
    products = (query.unsqueeze(1) * keys).reshape(-1, K)  # (64 S, K): the formula's inputs
    best = torch.linalg.lstsq(products, target.unsqueeze(-1)).solution  # (K, 1) the best diagonal
    residual = (products @ best).squeeze(-1) - target
    assert residual.norm() > 0.5 * target.norm()
