"""The fixes behind the sources' gallery (appendix A3) for Tae's post (001) and the Dissected Attention Network
notebook's filter (000): each test fails if the package goes back to what the source does.

- Tae's attention returns only its weighted sum (001 lines 192-200) and his decoder and model only predictions
  (lines 271-313): the package's decoder and model return their weights.
- "no need to worry about zero padding" (line 100), but his softmax runs over the pads (line 192): the package's
  weights on PAD are exactly 0.
- "effectively residual connections" (line 280): the output layer reads the context and the embedding beside the
  GRU's state (skip connections into the classifier); the package's Bahdanau output layer keeps both paths.
- the Dissected notebook's prefix "she s" without its space (000 line 127) keeps "she said ...": the course's
  prefix has the space.
"""
import pytest
import torch
from seeds import seed_lines
from torch.testing import assert_close

from course_utils import data
from course_utils.attention import make_attention
from course_utils.data import Pair
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.vocab import PAD_ID

B, S, E, H, V = 3, 6, 5, 4, 11
LENGTHS = torch.tensor([6, 4, 2])  # two rows padded


def _model(seed: int = 0) -> Seq2Seq:
    torch.manual_seed(seed)
    config = ModelConfig(13, V, "bahdanau", embedding_size=E, hidden_size=H, bidirectional=True, dropout=0.0)
    return Seq2Seq(config).eval()


def _padded_src(seed: int = 1) -> torch.Tensor:
    src = torch.randint(4, 13, (B, S), generator=torch.Generator().manual_seed(seed))  # (B, S) word ids
    return src.masked_fill(torch.arange(S) >= LENGTHS.unsqueeze(1), PAD_ID)


@pytest.mark.parametrize("kind", ["bahdanau", "dot", "general", "concat"])
def test_the_package_puts_exactly_zero_attention_on_padding_unlike_an_unmasked_softmax(kind):
    torch.manual_seed(0)
    scorer = make_attention(kind, 8, 8, attention_size=5)
    mask = data.lengths_to_mask(LENGTHS, S)  # (B, S) True on real tokens
    keys, query = torch.randn(B, S, 8), torch.randn(B, 8)
    weights = scorer(query, keys, mask).weights  # (B, S)
    assert (weights[~mask] == 0).all()
    assert_close(weights.sum(-1), torch.ones(B))
    unmasked = scorer(query, keys, torch.ones_like(mask)).weights  # Tae's F.softmax over every position
    assert (unmasked[~mask] > 0).all()


def test_the_package_model_returns_its_attention_weights_which_make_its_contexts():
    model, src = _model(), _padded_src()
    tgt = torch.randint(4, V, (B, 5), generator=torch.Generator().manual_seed(2))  # (B, T)
    out = model(src, LENGTHS, tgt)
    assert out.attention is not None and out.attention.shape == (B, 5, S)  # one row per output word
    assert_close(out.attention.sum(-1), torch.ones(B, 5))
    assert (out.attention[~data.lengths_to_mask(LENGTHS, S).unsqueeze(1).expand(-1, 5, -1)] == 0).all()
    memory, state = model.encode(src, LENGTHS)
    step = model.decoder.step(tgt[:, 0], state, memory)  # one step: its weights are the ones it attended with
    assert step.weights is not None and step.weights.shape == (B, S)
    context = torch.bmm(step.weights.unsqueeze(1), memory.keys).squeeze(1)  # (B, K)
    assert_close(context, model.decoder.attention(state.hidden, memory.keys, memory.mask).context)


def test_the_bahdanau_output_layer_reads_the_context_and_the_embedding_beside_the_state():
    decoder = _model().decoder
    torch.manual_seed(3)
    hidden, context, embedded = torch.randn(B, H), torch.randn(B, 2 * H), torch.randn(B, E)
    base = decoder.output_layer(hidden, context, embedded)  # (B, V)
    for changed in (decoder.output_layer(hidden, context, torch.randn(B, E)),  # only the embedding
                    decoder.output_layer(hidden, torch.randn(B, 2 * H), embedded)):  # only the context
        assert not torch.allclose(base, changed, atol=1e-4)


def test_the_course_filter_keeps_she_s_with_its_space_only():
    assert "she s " in data.ENG_PREFIXES and "she s" not in data.ENG_PREFIXES
    said, is_ = Pair("elle a dit non .", "she said no ."), Pair("elle est contente .", "she s happy .")
    assert data.keep_pair(is_) and not data.keep_pair(said)
    dissected = tuple("she s" if p == "she s " else p for p in data.ENG_PREFIXES)  # 000 line 127
    assert data.keep_pair(said, prefixes=dissected)  # what the missing space lets in


def test_the_dissected_notebook_has_she_s_without_the_space_and_carton_with_it():
    assert seed_lines("000")[126].strip() == '"she is", "she s",'  # line 127
    assert seed_lines("003")[245].split("|", 1)[1].strip() == '"she is", "she s ",'  # line 246
