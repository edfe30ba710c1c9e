"""The "predict the shape" questions of `questions.py` as code: each function builds the package objects its prompt
describes (tiny, seeded, untrained) and returns the shapes they produce, in the order the answer states them."""
from __future__ import annotations

import torch

Shapes = tuple[tuple[int, ...], ...]


# ------------------------------------------------------------------------------------------- shared tiny setups
def _shapes(*tensors) -> Shapes:
    return tuple(tuple(t.shape) for t in tensors)


def _vocab(words: str):
    from course_utils.vocab import Vocab
    return Vocab.build([words])


def _seq2seq(src_vocab_size: int, tgt_vocab_size: int, **config):
    from course_utils.seq2seq import ModelConfig, Seq2Seq
    torch.manual_seed(0)
    return Seq2Seq(ModelConfig(src_vocab_size, tgt_vocab_size, **config)).eval()


def _padded(lengths: list[int], vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """src (B, S) of random real ids, each row ending with EOS and padded, and its lengths (B,)."""
    from course_utils.vocab import EOS_ID, PAD_ID
    generator = torch.Generator().manual_seed(0)
    src = torch.full((len(lengths), max(lengths)), PAD_ID)
    for row, length in enumerate(lengths):
        src[row, :length - 1] = torch.randint(4, vocab_size, (length - 1,), generator=generator)
        src[row, length - 1] = EOS_ID
    return src, torch.tensor(lengths)


def nb00_dot_attention() -> Shapes:
    from course_utils.attention import DotAttention
    torch.manual_seed(0)
    mask = torch.arange(6)[None, :] < torch.tensor([6, 4, 2])[:, None]  # (3, 6)
    context, weights = DotAttention()(torch.randn(3, 16), torch.randn(3, 6, 16), mask)
    return _shapes(weights, context)


def nb01_collate() -> Shapes:
    from course_utils import data
    from course_utils.vocab import Vocab

    def words(n: int, first: str) -> str:
        return " ".join(f"{first}{i}" for i in range(n))

    pairs = [data.Pair(words(n, "f"), words(m, "e")) for n, m in ((4, 3), (7, 5), (2, 6))]
    src_vocab = Vocab.build(p.source for p in pairs)
    tgt_vocab = Vocab.build(p.target for p in pairs)
    dataset = data.TranslationDataset(pairs, src_vocab, tgt_vocab)
    batch = data.collate_batch([dataset[i] for i in range(len(dataset))])
    return _shapes(batch.src, batch.src_lengths, batch.src_mask, batch.tgt)


def nb01_column() -> Shapes:
    from course_utils import data
    sentence = "je suis fatigue ."
    return _shapes(data.tensor_from_sentence(_vocab(sentence), sentence))


def nb02_encoder() -> Shapes:
    from course_utils.encoder import EncoderRNN
    torch.manual_seed(0)
    encoder = EncoderRNN(50, 32, 256, bidirectional=True).eval()
    src, lengths = _padded([7, 5, 3, 6], 50)
    encoded = encoder(src, lengths)
    return _shapes(encoded.outputs, encoded.final)


def nb02_raw_gru() -> Shapes:
    from course_utils.encoder import EncoderRNN
    torch.manual_seed(0)
    encoder = EncoderRNN(50, 32, 256, bidirectional=True).eval()
    src, _ = _padded([7, 5, 3, 6], 50)
    outputs, h_n = encoder.gru(encoder.embedding(src))  # (B, S, E) unpacked
    return _shapes(outputs, h_n)


def nb03_bahdanau_step() -> Shapes:
    from course_utils.attention import BahdanauAttention
    torch.manual_seed(0)
    attention = BahdanauAttention(query_size=32, key_size=64, attention_size=32)
    keys = torch.randn(3, 8, 64)
    mask = torch.arange(8)[None, :] < torch.tensor([8, 5, 3])[:, None]  # (3, 8)
    projected = attention.project_keys(keys)
    context, weights = attention(torch.randn(3, 32), keys, mask, projected)
    return _shapes(projected, context, weights)


def nb03_location() -> Shapes:
    model = _seq2seq(20, 30, attention="location", hidden_size=16)
    src, lengths = _padded([5, 3], 20)
    tgt, _ = _padded([4, 2], 30)
    with torch.no_grad():
        output = model(src, lengths, tgt)
    return _shapes(output.log_probs, output.attention)


def nb04_general() -> Shapes:
    from course_utils.attention import GeneralAttention
    torch.manual_seed(0)
    attention = GeneralAttention(query_size=16, key_size=32)
    mask = torch.arange(7)[None, :] < torch.tensor([7, 4])[:, None]  # (2, 7)
    context, weights = attention(torch.randn(2, 5, 16), torch.randn(2, 7, 32), mask)
    return _shapes(attention.linear.weight, context, weights)


def nb04_gru_inputs() -> Shapes:
    from course_utils.decoder import BahdanauDecoder, LuongDecoder
    torch.manual_seed(0)
    decoders = [BahdanauDecoder(16, 32, 64, 40), LuongDecoder(16, 32, 64, 40, score="general"),
                LuongDecoder(16, 32, 64, 40, score="general", input_feeding=True)]
    return _shapes(*(decoder.gru.weight_ih_l0 for decoder in decoders))


def nb05_loss() -> Shapes:
    import torch.nn.functional as F

    from course_utils.loss import masked_nll_loss
    from course_utils.vocab import EOS_ID, PAD_ID
    torch.manual_seed(0)
    B, T, V = 2, 4, 7
    log_probs = F.log_softmax(torch.randn(B, T, V), dim=-1)
    tgt = torch.tensor([[5, 6, EOS_ID, PAD_ID], [4, EOS_ID, PAD_ID, PAD_ID]])
    return _shapes(log_probs.reshape(B * T, V), tgt.reshape(B * T), masked_nll_loss(log_probs, tgt))


def nb05_greedy() -> Shapes:
    from course_utils.search import greedy_decode
    from course_utils.vocab import EOS_ID
    model = _seq2seq(20, 40, attention="bahdanau", embedding_size=8, hidden_size=16)
    with torch.no_grad():
        model.decoder.out.bias[EOS_ID] = -1e4  # no row ends early: every row runs to the cap
    src, lengths = _padded([5, 4, 2], 20)
    output = greedy_decode(model, src, lengths, max_steps=6)
    return _shapes(output.tokens, output.lengths, output.attention, output.log_prob)


def nb06_forced() -> Shapes:
    from course_utils.metrics import attention_entropy
    from course_utils.translate import translate_forced
    source, output = "nous sommes en retard .", "we are late ."
    src_vocab, tgt_vocab = _vocab(source), _vocab(output)
    model = _seq2seq(len(src_vocab), len(tgt_vocab), attention="bahdanau", embedding_size=8, hidden_size=16)
    translation = translate_forced(model, src_vocab, tgt_vocab, source, output)
    return _shapes(translation.attention, attention_entropy(translation.attention))


def nb07_beam_step() -> Shapes:
    from course_utils.search import forbid_special_tokens
    from course_utils.vocab import SOS_ID
    model = _seq2seq(20, 40, attention="bahdanau", embedding_size=8, hidden_size=32)
    src, lengths = _padded([6], 20)
    with torch.no_grad():
        memory, state = model.encode(src, lengths)  # a batch of one
        first = model.decoder.step(torch.tensor([SOS_ID]), state, memory)
        top_log_probs, tokens = forbid_special_tokens(first.log_probs)[0].topk(4)  # N = 4 open hypotheses
        parents = torch.zeros(4, dtype=torch.long)  # all four extend the empty prefix
        every_row = memory.index_select(torch.zeros_like(parents))
        second = model.decoder.step(tokens, first.state.index_select(parents), every_row)
        candidates = (top_log_probs[:, None] + forbid_special_tokens(second.log_probs)).reshape(-1)
    return _shapes(every_row.keys, second.log_probs, candidates)


def nb07_sample() -> Shapes:
    from course_utils.search import sample_decode
    model = _seq2seq(20, 40, attention="bahdanau", embedding_size=8, hidden_size=16)
    src_ids, _ = _padded([6], 20)
    output = sample_decode(model, src_ids.repeat(8, 1), torch.full((8,), 6), temperature=1.0, max_steps=1,
                           generator=torch.Generator().manual_seed(0))
    return _shapes(output.tokens, output.attention, output.log_prob)


def nb08_gated() -> Shapes:
    from course_utils.classifier import AttentionClassifier
    torch.manual_seed(0)
    model = AttentionClassifier(30, embedding_size=8, hidden_size=16)
    words, lengths = _padded([5, 4, 3, 5], 30)
    mask = torch.arange(5)[None, :] < lengths[:, None]
    output = model(words, mask)
    return _shapes(output.logits, output.weights, output.sparsity)


def nb08_bag_of_words() -> Shapes:
    from course_utils.classifier import BagOfWordsClassifier
    model = BagOfWordsClassifier(30)
    words, lengths = _padded([5, 4, 3, 5], 30)
    mask = torch.arange(5)[None, :] < lengths[:, None]
    counts = torch.zeros(4, 30).scatter_add_(1, words, mask.float())  # (B, V) each word's count
    return _shapes(model.word_scores.weight, counts, model(words, mask).logits)


def nb09_multi_head() -> Shapes:
    from course_utils.transformer import MultiHeadAttention
    torch.manual_seed(0)
    attention = MultiHeadAttention(hidden_size=64, heads=4)
    query, keys = torch.randn(2, 5, 64), torch.randn(2, 7, 64)
    mask = torch.ones(2, 5, 7, dtype=torch.bool)  # (B, T, S)
    out = attention(query, keys, mask)
    return _shapes(attention.split_heads(attention.query(query)), out.context, out.weights)


def nb10_alignment_matrices() -> Shapes:
    from course_utils.alignment import shifted_rows, word_block
    torch.manual_seed(0)
    weights = torch.rand(7, 6).softmax(dim=-1)  # (T + 1, S + 1): 6 output words + <eos>, 5 source words + <eos>
    return _shapes(word_block(weights, 6, 5), shifted_rows(weights))
