"""Questions to think about: a few "predict the shape" and concept questions per notebook (`QUESTIONS`, keyed by
"00" ... "10"), listed without answers by `show_questions("NN")`; the answers are on the course site only.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from course_utils.exercises import question_shapes
from course_utils.exercises.question_shapes import Shapes

KINDS = ("shape", "concept")
KIND_LABELS = {"shape": "predict the shape", "concept": "concept"}
SITE_COMMAND = "python -m tools.site --output DIR"


@dataclass(frozen=True)
class Question:
    """One question of a notebook, kind "shape" or "concept"; prompt and answer are Markdown. A shape question also
    has `shapes` (those its answer states, in order) and `compute` (the shapes the package really produces).
    Introduced in notebook 01."""

    notebook: str
    kind: str
    prompt: str
    answer: str
    shapes: Shapes = ()
    compute: Callable[[], Shapes] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if (self.kind == "shape") != (self.compute is not None and bool(self.shapes)):
            raise ValueError("a shape question needs `shapes` and `compute`; a concept question has neither")


# ------------------------------------------------------------------------------------------- the questions
def _shape(notebook: str, prompt: str, answer: str, shapes: Shapes, compute: Callable[[], Shapes]) -> Question:
    return Question(notebook, "shape", prompt, answer, shapes, compute)


def _concept(notebook: str, prompt: str, answer: str) -> Question:
    return Question(notebook, "concept", prompt, answer)


QUESTIONS: dict[str, list[Question]] = {
    "00": [
        _shape("00", "A decoder attends with dot attention: its state `query` is (3, 16) for a batch of 3 sentences, "
                     "the encoder's outputs `keys` are (3, 6, 16) (the longest sentence has 6 tokens, the others are "
                     "padded) and `mask` is (3, 6). What are the shapes of the weights and of the context?",
               "`weights` (3, 6) and `context` (3, 16): one weight per source position (padding included, where it "
               "is exactly 0), summing to 1 per sentence, and one weighted sum of the keys per sentence. Notebook "
               "03 builds this step by step.",
               ((3, 6), (3, 16)), question_shapes.nb00_dot_attention),
        _concept("00", "Without attention, what does the decoder know about the French sentence at its tenth output "
                       "word, and why does that make long sentences harder?",
                 "Only the encoder's final state, one vector of H numbers computed once, plus what its own state "
                 "carried forward: every word of the source had to be squeezed into it. With attention the decoder "
                 "reads all S encoder outputs again at every step, so nothing has to survive the squeeze. How much "
                 "that matters by length is an empirical question: the notebook measures it on one run."),
        _concept("00", "In the course's names, which tensors are the query, the keys and the values, and why does "
                       "the mask matter?",
                 "The query is the decoder's state (B, H); the keys and the values are both the encoder's outputs "
                 "(B, S, K) (a Transformer projects them apart). The mask is True on real tokens: the scores of "
                 "padded positions are set to minus infinity before the softmax, so their weight is exactly 0 and "
                 "padding never enters the context."),
    ],
    "01": [
        _shape("01", "Three training pairs go through `TranslationDataset` and `collate_batch`. Their French sources "
                     "have 4, 7 and 2 words, their English targets 3, 5 and 6 words. What are the shapes of "
                     "`batch.src`, `batch.src_lengths`, `batch.src_mask` and `batch.tgt`? (What does `encode` "
                     "append, and what do the targets not start with?)",
               "`src` (3, 8), `src_lengths` (3,), `src_mask` (3, 8) and `tgt` (3, 7). `encode` appends `<eos>` to "
               "every sentence, so the longest source has 7 + 1 = 8 tokens and the longest target 6 + 1 = 7; the "
               "targets carry no `<sos>` (the decoder adds it). Shorter rows are padded with `<pad>` to the "
               "longest one, `src_lengths` holds the real lengths (5, 8, 3) and `src_mask` is True on real tokens.",
               ((3, 8), (3,), (3, 8), (3, 7)), question_shapes.nb01_collate),
        _shape("01", "The 2017 tutorial's form: what shape does `data.tensor_from_sentence(vocab, \"je suis fatigue "
                     ".\")` return?",
               "(5, 1): four tokens (`.` is a word of its own) plus `<eos>`, as a column. The tutorial feeds one "
               "sentence at a time in `nn.GRU`'s default layout `(seq_len, batch, features)`, so the batch axis "
               "has size 1; the course's batches are `(B, S)` instead.",
               ((5, 1),), question_shapes.nb01_column),
        _concept("01", "Why does `split_pairs` split by French sentence rather than by pair?",
                 "The corpus often holds several English translations of one French sentence. A per-pair split "
                 "puts some of them in train and others in test, so the model is tested on French sentences it "
                 "was trained on and the score measures memory rather than translation. `split_pairs` shuffles "
                 "and cuts the distinct French sentences, so all the pairs of one source land in the same split "
                 "(an English sentence may still occur in two splits, which is fine)."),
        _concept("01", "Why are the vocabularies built from the train split only, and what happens to a dev word "
                       "they do not know?",
                 "A word seen only in dev or test must be unknown to the model, exactly as it would be in a new "
                 "sentence; building the vocabulary from every split would leak the held-out data into the model. "
                 "`encode` maps such a word to `<unk>` (id 3) instead of failing; how often that happens on dev is "
                 "the out-of-vocabulary rate."),
    ],
    "02": [
        _shape("02", "`EncoderRNN(vocab_size=50, embedding_size=32, hidden_size=256, bidirectional=True)` gets `src` "
                     "of shape (B=4, S=7) and its lengths. What shapes do `outputs` and `final` have?",
               "`outputs` (4, 7, 512): one key per source position, the forward and the backward halves side by "
               "side (K = 2H). `final` (4, 256): the forward state after the last word and the backward state "
               "after reading back to the first are concatenated (2H = 512) and the bridge "
               "`tanh(Linear(2H, H_dec))` maps them to the decoder's hidden size, H_dec = H = 256 by default.",
               ((4, 7, 512), (4, 256)), question_shapes.nb02_encoder),
        _shape("02", "Inside that encoder, `encoder.gru` is `nn.GRU(32, 256, batch_first=True, "
                     "bidirectional=True)`. Called directly (unpacked) on the embedded batch of shape (4, 7, 32), "
                     "it returns `(outputs, h_n)`. What are their shapes?",
               "`outputs` (4, 7, 512) and `h_n` (2, 4, 256). `batch_first` applies to the input and the outputs "
               "only: the hidden state is always `(num_layers * num_directions, B, H)`, here one layer and two "
               "directions. The encoder concatenates the two directions into `(B, 2H)` before its bridge.",
               ((4, 7, 512), (2, 4, 256)), question_shapes.nb02_raw_gru),
        _concept("02", "Why does the encoder pack its batch (`pack_padded_sequence`) instead of running the GRU "
                       "over the padded tensor?",
                 "Unpacked, the GRU also reads the `<pad>` tokens after a short sentence. The pad embedding is "
                 "zero, but a zero input still changes the state (the biases and the recurrent weights act on "
                 "it), so the final state of a short sentence depends on how much padding its batch needed; a "
                 "bidirectional encoder's backward half even starts in the pads, so every backward output is "
                 "wrong. Packing runs each sentence over its real tokens only: its encoding is the same alone or "
                 "in any batch."),
        _concept("02", "What does the bridge of a bidirectional encoder do, and why is it needed?",
                 "The decoder starts from one state of its own hidden size H_dec, but a bidirectional encoder ends "
                 "with two states of size H: the forward one after the last word and the backward one after "
                 "reading back to the first. The bridge concatenates them (2H numbers) and maps them to H_dec "
                 "with a linear layer and tanh. It is also used when a one-direction encoder's H differs from "
                 "H_dec; otherwise the final state is passed through unchanged."),
    ],
    "03": [
        _shape("03", "`BahdanauAttention(query_size=32, key_size=64, attention_size=32)` (keys of a bidirectional "
                     "encoder with H = 32) gets the previous decoder state `query` (B=3, 32), `keys` (3, 8, 64) "
                     "and a `mask` (3, 8). What shapes have `project_keys(keys)`, the context and the weights?",
               "`project_keys(keys)`, the `U k` computed once per sentence: (3, 8, 32), one A-sized vector per "
               "source position. The context: (3, 64), a weighted sum of keys has the keys' size K, not the "
               "decoder's H. The weights: (3, 8), one per source position, each row summing to 1 and exactly 0 "
               "on the pads.",
               ((3, 8, 32), (3, 64), (3, 8)), question_shapes.nb03_bahdanau_step),
        _shape("03", "The 2017 tutorial's decoder (`ModelConfig(..., attention=\"location\", hidden_size=16)`, "
                     "`MAX_LENGTH` = 10, a target vocabulary of 30 words) runs a teacher-forced pass over `src` "
                     "(2, 5) and `tgt` (2, 4). What shapes have `log_probs` and `attention`?",
               "`log_probs` (2, 4, 30) and `attention` (2, 4, 10): one weight per slot 0..MAX_LENGTH-1, not one "
               "per source position (content-based attention would give (2, 4, 5)). The keys are zero-padded to "
               "the 10 slots, the weights are computed from the previous word and state without reading them, "
               "and the slots past the end of a sentence get weight too: nothing masks them.",
               ((2, 4, 30), (2, 4, 10)), question_shapes.nb03_location),
        _concept("03", "Why is the mask applied to the scores before the softmax, and what goes wrong without it?",
                 "Filling the pads' scores with `-inf` before the softmax gives them exactly 0 weight (exp(-inf) = "
                 "0) and the real tokens' weights alone sum to 1. A pad's score is an ordinary finite number (its "
                 "key is zero, so the Bahdanau score is `v^T tanh(W s)`), so an unmasked softmax gives the pads "
                 "part of the weight: the context shrinks and depends on which batch the sentence is in. Zeroing "
                 "the pads after the softmax would leave rows that no longer sum to 1."),
        _concept("03", "What does teacher forcing change in the decoder, and what is exposure bias?",
                 "It decides the input word of each step after the first: with teacher forcing the gold previous "
                 "word of the reference, free running the decoder's own previous prediction (its argmax). Step 0 "
                 "reads `<sos>` either way; after that the inputs, and the predictions, differ. A model trained "
                 "only with teacher forcing has only seen correct prefixes, but at translation time it must "
                 "continue its own, possibly wrong, prefix: that mismatch is exposure bias."),
    ],
    "04": [
        _shape("04", "`GeneralAttention(query_size=16, key_size=32)` scores all T steps at once: `query` (B=2, T=5, "
                     "16), `keys` (2, 7, 32), `mask` (2, 7). What shapes have `linear.weight`, the context and the "
                     "weights?",
               "`linear.weight` (32, 16): it stores `W^T`, projecting each query to the keys' size; the context "
               "(2, 5, 32), one weighted sum of keys per decoder step; the weights (2, 5, 7), one distribution "
               "over the 7 source positions per step.",
               ((32, 16), (2, 5, 32), (2, 5, 7)), question_shapes.nb04_general),
        _shape("04", "With E = 16, H = 32, keys of size K = 64 and 40 target words: what is the shape of "
                     "`decoder.gru.weight_ih_l0` for a `BahdanauDecoder`, a `LuongDecoder` and a `LuongDecoder` "
                     "with `input_feeding=True`?",
               "Bahdanau (96, 80), Luong (96, 16), Luong with input feeding (96, 48). The rows are the three "
               "stacked gates, 3H = 96. Bahdanau's GRU reads `[E y; c]`, E + K = 80 inputs, because it attends "
               "before the step; Luong's reads the embedding alone (it attends after the step), and with input "
               "feeding also the previous attentional state, E + H = 48.",
               ((96, 80), (96, 16), (96, 48)), question_shapes.nb04_gru_inputs),
        _concept("04", "Why does the scaled dot product divide the scores by sqrt(K)?",
                 "For queries and keys with unit-variance entries, `q^T k` has variance K, so its spread grows like "
                 "sqrt(K): with large K the scores span tens of units, the softmax puts nearly all the weight on "
                 "one key and its gradient vanishes. Dividing by sqrt(K) keeps the scores' spread near 1 whatever "
                 "K. In the course's ten-seed runs unscaled dot and general saturated early and some seeds never "
                 "recovered, so the lecture recipes use `scaled_dot` and `scaled_general`."),
        _concept("04", "Why can a `LuongDecoder` without input feeding compute all T teacher-forced steps with one "
                       "GRU call, while a `BahdanauDecoder` cannot?",
                 "Luong steps the GRU first and attends afterwards; its GRU reads only the previous words, which "
                 "teacher forcing knows in advance, so one GRU call over `(B, T, E)` gives every state and the "
                 "attention then scores all T queries at once. Bahdanau's GRU input at step i contains the context "
                 "`c_i`, which depends on the previous state `s_{i-1}`, so its recurrence must run step by step; "
                 "it can only move its output layer out of the loop. Input feeding puts Luong back into a loop "
                 "for the same reason."),
    ],
    "05": [
        _shape("05", "The decoder returns `log_probs` (B=2, T=4, V=7) and `tgt` is (2, 4). What shapes go into "
                     "`nn.NLLLoss` after flattening, and what shape does `masked_nll_loss(log_probs, tgt)` return?",
               "(8, 7) and (8,): `log_probs.reshape(B * T, V)` and `tgt.reshape(B * T)`. The loss is a scalar, "
               "shape (), the mean negative log-probability over the real target tokens only "
               "(`ignore_index=PAD_ID`).",
               ((8, 7), (8,), ()), question_shapes.nb05_loss),
        _shape("05", "`search.greedy_decode(model, src, src_lengths, max_steps=6)` runs on 3 sentences, `src` (3, 5), "
                     "with a Bahdanau model and 40 target words, and no row produces `<eos>` before the cap. What "
                     "shapes have `tokens`, `lengths`, `attention` and `log_prob`?",
               "`tokens` (3, 6), `lengths` (3,), `attention` (3, 6, 5) and `log_prob` (3,): one row per sentence, "
               "one column per output step up to the cap of 6, one attention row per output step over the 5 "
               "source positions, and one total log-probability per sentence.",
               ((3, 6), (3,), (3, 6, 5), (3,)), question_shapes.nb05_greedy),
        _concept("05", "Why is the mean of the per-batch perplexities not the perplexity of the set?",
                 "Perplexity is exp of the mean negative log-likelihood per token, so the batches' losses must be "
                 "averaged weighted by their token counts first and exponentiated last: `exp(sum(n_i L_i) / "
                 "sum(n_i))`. Since exp is convex, the token-weighted mean of the batches' perplexities is never "
                 "smaller (Jensen's inequality); the plain mean can land on either side, because it also gives a "
                 "small batch the weight of a large one."),
        _concept("05", "Why does the loss average over the real target tokens and not over all `B * T` positions?",
                 "Pads add 0 to the sum but would count in the denominator, so the naive mean is the masked loss "
                 "times the batch's fraction of real tokens: a batch with much padding would learn less per word "
                 "for no reason. Treating the pads as targets instead (no `ignore_index`) would train the model to "
                 "predict `<pad>` after `<eos>`, a task unrelated to translation, and add large terms to the loss."),
    ],
    "06": [
        _shape("06", "A model force-decodes the French `nous sommes en retard .` with the English `we are late .` "
                     "(`translate_forced`). What shapes have the `attention` of the resulting `Translation` and "
                     "`metrics.attention_entropy(attention)`?",
               "`attention` (5, 6): one row per output token and one column per source token. T = 5: `we`, "
               "`are`, `late`, `.` and the `<eos>` that is appended to the forced output; S = 6: the five French "
               "tokens and `<eos>`. The entropy is (5,), one number per row (output step), between 0 and log 6.",
               ((5, 6), (5,)), question_shapes.nb06_forced),
        _concept("06", "Why does the entropy of a heatmap row lie between 0 and log S, and what do the two ends "
                       "mean?",
                 "A row is a probability distribution over the S source tokens (`<eos>` included). Its entropy is "
                 "0 when all the weight is on one token and reaches log S when the weight is spread evenly. A "
                 "high-entropy row means the context is an average of many keys: the decoder relies on its state, "
                 "and the row says little about which word mattered."),
        _concept("06", "Hiding the least attended word changes about as many translations as hiding the most "
                       "attended one, and in some runs more. What does that say about heatmaps as explanations?",
                 "Attention weight is not importance (Jain and Wallace, 2019; Serrano and Smith, 2019): the "
                 "weights rank the words by their effect on the output only loosely. A word can shape the output "
                 "through the "
                 "encoder's recurrent state (it changes every key after it and the decoder's initial state) "
                 "without receiving attention, and weight is often parked on `<eos>` or punctuation. Attention is "
                 "evidence of where the decoder looked, one path of information through the model, not an "
                 "explanation of its decision."),
        _concept("06", "The 2017 tutorial labels its heatmap axes with `[''] + tokens`. Why is the `''` needed, and "
                       "what happens without it?",
                 "The tutorial sets the labels before fixing where the ticks are; `MultipleLocator(1)` also makes "
                 "an off-screen tick at -1, and the `''` fills it. It works: every real label lands on its own "
                 "cell. Its faults are that it is fragile and that matplotlib warns about it: drop the `''` and "
                 "every label shifts one cell to the left (and one row up), onto the wrong word, with no error. "
                 "`viz.plot_attention` places one tick per cell explicitly."),
    ],
    "07": [
        _shape("07", "Beam search with k = 4 on one sentence of S = 6 tokens (keys of size K = 32, 40 target words): "
                     "after the first step there are N = 4 open hypotheses. For the second step, what shapes have "
                     "the keys of `memory.index_select(...)`, the step's `log_probs` and the flattened "
                     "`candidates` the best k are taken from?",
               "The keys (4, 6, 32): the one sentence's keys repeated for each hypothesis (row 0, four times). "
               "`log_probs` (4, 40): one row per hypothesis. `candidates` (160,): every one-word extension, the "
               "(N, V) table of total log-probabilities flattened to N * V; a flat index i of its top k gives "
               "the parent `i // V` and the new word `i % V`.",
               ((4, 6, 32), (4, 40), (160,)), question_shapes.nb07_beam_step),
        _shape("07", "`sample_decode` draws the first word of one 6-token sentence 8 times: `src_ids.repeat(8, 1)`, "
                     "`max_steps=1`. What shapes have `tokens`, `attention` and `log_prob`?",
               "`tokens` (8, 1), `attention` (8, 1, 6) and `log_prob` (8,): the 8 copies are a batch, each row "
               "one independent draw of one step; the attention has one row per output step over the 6 source "
               "tokens; `log_prob` is the model's (untempered) log-probability of each row's tokens.",
               ((8, 1), (8, 1, 6), (8,)), question_shapes.nb07_sample),
        _concept("07", "Why does beam search rank its finished hypotheses by a length-normalised score?",
                 "Every word adds a negative log-probability, so the total log P only decreases as a hypothesis "
                 "grows: ranked by it (`length_penalty=0`) beam search prefers short outputs. Dividing by "
                 "`T ** length_penalty` (1 by default: the mean log-probability per token) compares hypotheses of "
                 "different lengths on an equal footing."),
        _concept("07", "Which settings of `sample_decode` give greedy decoding, and why can greedy decoding miss "
                       "the most probable sentence?",
                 "`top_k=1` leaves only the argmax, and a temperature going to 0 (exactly 0 in the package) puts "
                 "all the probability on it: both are greedy decoding. Greedy commits to the best word at each "
                 "step, not to the best sentence: a less probable word early can lead to a sentence whose total "
                 "log-probability is higher. Beam search keeps k prefixes to look for such sentences."),
    ],
    "08": [
        _shape("08", "`AttentionClassifier(vocab_size=30, embedding_size=8, hidden_size=16)` reads `words` (B=4, S=5) "
                     "with their `mask`. What shapes have `logits`, `weights` and `sparsity`?",
               "`logits` (4, 6), one score per subject class (i, he, she, you, we, they); `weights` (4, 5), one "
               "gate per word, 0 on padding; `sparsity` is a scalar, shape (), the fraction of each sentence's "
               "words kept, averaged over the sentences.",
               ((4, 6), (4, 5), ()), question_shapes.nb08_gated),
        _shape("08", "The bag-of-words baseline, `BagOfWordsClassifier(vocab_size=30)`, on `words` (4, 5): what "
                     "shapes have `word_scores.weight`, the word counts and the logits `counts @ W + b`?",
               "`word_scores.weight` (30, 6): one row of class scores per word (W stored as an embedding); the "
               "counts (4, 30), one count per sentence and vocabulary word, pads not counted; the logits (4, 6). "
               "The model sums the rows of a sentence's words instead of building the (B, V) counts: the same "
               "result.",
               ((30, 6), (4, 30), (4, 6)), question_shapes.nb08_bag_of_words),
        _concept("08", "The lecture's sparsity term is a masked mean of the attention weights over `input_ids == "
                       "padding_id`. Why is it 0 for an unpadded sentence, and what does the penalty push on?",
                 "`input_ids == padding_id` is True on the padding, so the masked mean is taken over the padding "
                 "positions, not over the words. An unpadded sentence (or batch) has no padding position: the mean "
                 "over nothing is 0 whatever the weights. In a padded batch the term is the padding's mean weight: "
                 "the attender's outputs there are the zeros pad_packed_sequence writes, so the weight is the "
                 "sigmoid of the output layer's bias, and the penalty only lowers that bias, every word's weight "
                 "alike, never one word's more than another's. The fix averages the gates over each sentence's real "
                 "words (the mask `input_ids != padding_id`), then over the sentences."),
        _concept("08", "Why are soft gates not a real selection, and what do hard gates with the straight-through "
                       "estimator change?",
                 "A soft gate of 0.01 makes a word small, not absent: the predictor still reads it, and the answer "
                 "can leak through the gates' values. Hard gates are exactly 0 or 1 (gate > 0.5), so a word is "
                 "read or not. Rounding has no useful gradient, so the straight-through estimator uses the hard "
                 "value forward and the soft gate's gradient backward: `hard + (soft - soft.detach())`."),
    ],
    "09": [
        _shape("09", "`MultiHeadAttention(hidden_size=64, heads=4)` gets a query (2, 5, 64) and keys and values "
                     "(2, 7, 64) with a mask (2, 5, 7). What are the shapes of the query split into heads, of the "
                     "context it returns, and of its weights?",
               "The split query is (2, 4, 5, 16): each head gets H / h = 16 of the 64 features, and the head axis "
               "comes before the positions (`view` to (B, T, h, Dh), then `transpose(1, 2)`). The context is "
               "(2, 5, 64), the heads merged back, and the weights (2, 4, 5, 7): one (T, S) map per head.",
               ((2, 4, 5, 16), (2, 5, 64), (2, 4, 5, 7)), question_shapes.nb09_multi_head),
        _concept("09", "Why is the score divided by the square root of the head size, and what goes wrong without "
                       "it?",
                 "A dot product of two vectors with Dh independent unit-variance entries has variance Dh, so "
                 "larger heads give larger scores; the softmax of large scores is nearly one-hot, its gradient "
                 "nearly zero, and training stalls. Dividing by sqrt(Dh) keeps the scores' variance about 1 whatever "
                 "the head size (appendix A1 measures the collapse of unscaled dot and general scores)."),
        _concept("09", "A Transformer without positions reads a permuted sentence: what changes in its encoder's "
                       "outputs, and why?",
                 "Only their order: self-attention and the feed-forward layers treat the positions as a set, so "
                 "permuting the input permutes the outputs the same way (permutation equivariance), and a decoder "
                 "attending over them sees the same keys and values. Word order is lost unless positions are added, "
                 "as the sinusoidal encodings do; a GRU gets order from reading the words one after another."),
    ],
    "10": [
        _shape("10", "A decoder translated a 5-word source into 6 words: its weights, teacher forced on the output, "
                     "are (7, 6), with the `<eos>` step as the last row and the source `<eos>` as the last column. "
                     "What shapes do `word_block(weights, 6, 5)` and `shifted_rows(weights)` return?",
               "`word_block` (6, 5): the words-by-words block, `<eos>` row and column dropped, each row renormalised; "
               "`shifted_rows` (6, 6): rows 1..6, the weights of step t + 1 read as the alignment of word t (Chen et "
               "al. 2020), the source `<eos>` column still in.",
               ((6, 5), (6, 6)), question_shapes.nb10_alignment_matrices),
        _concept("10", "Why does the alignment error rate use two sets of gold links, sure and possible?",
                 "Annotators agree on some links (sure, S) and not on others (possible, P, with S inside P). "
                 "AER = 1 - (|A∩S| + |A∩P|) / (|A| + |S|) rewards a predicted link that is at least possible, and "
                 "counts only the sure links as missed recall, so an aligner is not punished for a link on which "
                 "people themselves disagree (Och & Ney 2003)."),
        _concept("10", "Shifted attention (reading the weights one step later) aligns better in Transformers; why "
                       "does it align worse for the course's RNN decoders?",
                 "In a Transformer the cross-attention of step t + 1 is computed with output word t as its input, "
                 "so it looks at the source word that was just translated. The Bahdanau and Luong decoders of the "
                 "course attend while producing word t: the weights of step t already belong to word t, and those "
                 "of step t + 1 belong to the next word. The results file shows it at every seed and kind."),
    ],
    # the appendices: concept questions only (they are read beside the core path, not dissected cell by cell)
    "A1": [
        _concept("A1", "Why does one trained model per recipe not say which attention score is better?",
                 "Another seed moves a recipe's test BLEU by one to several points, as much as the differences "
                 "between recipes. One run is one draw from that spread. A comparison needs several seeds per recipe "
                 "and compares their distributions."),
        _concept("A1", "What does the bootstrap interval of one model's test BLEU measure, and what does it miss?",
                 "It resamples the test sentences, so it measures how much the score would move on another test set "
                 "of the same kind. It says nothing about training randomness: another seed gives another model, "
                 "and for the scaled Luong recipes that spread is larger than the bootstrap's."),
        _concept("A1", "Why compare recipes at equal seconds of training as well as at equal epochs?",
                 "An epoch does not cost the same for every decoder: Bahdanau's steps wait for each other, a Luong "
                 "decoder without input feeding can run all steps at once. At equal epochs Bahdanau leads; at equal "
                 "seconds most of that lead is gone, so the comparison depends on the budget that is fixed."),
    ],
    "A2": [
        _concept("A2", "The GRU is sequential, so why is one call over a packed batch much faster than a Python "
                       "loop over its tokens?",
                 "One call computes the input projections of every step in one matrix product and runs the "
                 "recurrence in compiled code, for all sentences of the batch at once. The loop pays Python's "
                 "overhead and a small matrix product at every token of every sentence."),
        _concept("A2", "Why can a Luong decoder without input feeding be trained all steps at once, and a Bahdanau "
                       "decoder cannot?",
                 "With teacher forcing, Luong's GRU reads only the reference words, so all its states come from one "
                 "GRU call and attention follows for every step at once. Bahdanau's attention needs the previous "
                 "state and its context feeds the GRU, so each step waits for the one before."),
        _concept("A2", "Where does the course's speed-up over the 2017 tutorial's recipe come from?",
                 "From batching: the course's model trained one pair a step is about as slow as the tutorial's "
                 "recipe. Batches of many padded sentences turn many small operations into a few large ones."),
    ],
    "A3": [
        _concept("A3", "Why does a cleaning regex anchored with `^` clean only the start of a sentence?",
                 "`^` matches only at the start of the string, so `re.sub` replaces at most the first run of "
                 "unwanted characters. Apostrophes, digits and commas further on stay, and the filter that counts "
                 "on cleaned prefixes then keeps far fewer pairs."),
        _concept("A3", "Loye's concat score adds the query and the key before one weight matrix. Why is that not "
                       "Luong's concat score?",
                 "Luong's concat multiplies the stacked vector by one matrix, which is a separate matrix for the "
                 "query and for the key. Adding first forces the two to share one matrix and to have the same size, "
                 "a special case. The article's `v` is also allocated without being initialised."),
        _concept("A3", "Why should a test of an encoder or an attention layer use a batch of more than one "
                       "sentence?",
                 "With a batch of one, a mix-up between the batch and the time axis, or a discarded `permute`, often "
                 "leaves every shape right. With several sentences of different lengths, the mistake changes shapes "
                 "or mixes sentences, and a comparison with each sentence run alone catches it."),
    ],
    "A4": [
        _concept("A4", "What does label smoothing with 0.1 change in the training target, and why can the loss on "
                       "the reference word rise while translations get better?",
                 "The target puts 0.9 on the reference word and spreads 0.1 over the others, so the model is no "
                 "longer rewarded for pushing the reference's probability towards 1. The negative log-probability "
                 "of the reference then stays higher, but less overconfident distributions help decoding."),
        _concept("A4", "Why does a checkpoint store the vocabularies and the configuration beside the weights?",
                 "Weights only mean something with the same model sizes and the same word ids. Loading them into "
                 "another size, or with vocabularies built from other data, would fail or silently translate "
                 "nonsense, so the loader checks both and refuses in one line."),
        _concept("A4", "What is exposure bias, and what does a lower teacher-forcing ratio trade?",
                 "A model trained only on reference prefixes never sees its own mistakes, but at translation time "
                 "it reads its own words. Feeding it its own predictions during part of training narrows that gap, "
                 "at the price of slower and noisier training."),
    ],
    "A5": [
        _concept("A5", "Kim's training loop logs `current_loss.item()/(j+1)` after its loop over the sentences. What "
                       "does that number measure, and what should be logged instead?",
                 "`current_loss` restarts at zero for every sentence, so after the loop it holds the last sentence's "
                 "loss alone, and `j + 1` is the number of sentences: the log is one sentence's loss shrunk n times, "
                 "as noisy as one sentence and far too small. Log the epoch's mean instead: add up every sentence's "
                 "(or every word's) loss during the epoch and divide by their number at the end."),
        _concept("A5", "Why does the heatmap of Kim's evaluation cell show sentence 6's words but not sentence 6's "
                       "attention?",
                 "The cell builds sentence 6's tensor without assigning it, so it encodes `source` and decodes as "
                 "long as `target`, the names the training loop left behind, which hold the last training pair. "
                 "Only the tick labels come from sentence 6. A function that takes the sentence as its argument, "
                 "such as `translate`, cannot read such leftovers."),
        _concept("A5", "The post's decoder attends to the zero rows of `enc_outputs` past the sentence, and its "
                       "heatmap cuts those columns away. Why do zero rows get any weight, and what is the fix?",
                 "A zero key still gets a finite score, the same formula applied to a vector of zeros, so the "
                 "softmax gives it a share; cutting the columns hides that share and leaves rows that no longer sum "
                 "to 1. Masking the padded positions with minus infinity before the softmax gives them exactly 0, "
                 "so the weights on the real words sum to 1 and there is nothing to cut."),
    ],
    "A6": [
        _concept("A6", "A training loop stops a pair at the first predicted `<eos>` and divides its summed loss by the "
                       "whole target length. Which runs does the printed loss flatter, and what should it divide by?",
                 "Runs that stop early often: a pair stopped after k of its T tokens reports k/T of its real mean "
                 "loss. Divide by the tokens actually scored, or score every real target token and average over "
                 "them, as the package does."),
        _concept("A6", "Why must a teacher-forced training step run over the whole target, even where the model "
                       "already predicts `<eos>`?",
                 "The next input is the reference word anyway, so nothing forces the loop to stop. An `<eos>` "
                 "predicted too early is exactly the mistake the step should correct, and only the loss on the "
                 "reference words after it carries that correction."),
        _concept("A6", "`if torch.cuda.is_available:` and a decoding loop `while True` both worked on their author's "
                       "machine. Why, and where does each fail?",
                 "A function object is always true, so the first picks CUDA everywhere: fine on a GPU machine, an "
                 "error at the first `.to(device)` elsewhere. The loop ends only when the model predicts `<eos>`, "
                 "which a model fitted to its training sentences does there; an untrained model or a new sentence "
                 "can keep it going for ever, so decoding needs a length cap."),
    ],
}


# ------------------------------------------------------------------------------------------- in the notebooks
def notebook_id(notebook: str | int) -> str:
    """"03" for 3, "3", "03" or "03_attention_decoder"; ValueError for a notebook with no questions."""
    match = re.match(r"\d+", str(notebook).strip())
    key = f"{int(match.group()):02d}" if match else str(notebook)
    if key not in QUESTIONS:
        raise ValueError(f"no questions for notebook {notebook!r}: choose one of {', '.join(QUESTIONS)}")
    return key


def questions_markdown(notebook: str | int) -> str:
    """A notebook's questions as Markdown, prompts only, and where the answers are."""
    key = notebook_id(notebook)
    lines = [f"### Questions to think about (notebook {key})", ""]
    lines += [f"{number}. *({KIND_LABELS[q.kind]})* {q.prompt}" for number, q in enumerate(QUESTIONS[key], 1)]
    lines += ["", "Think them through (or run a cell to check a shape) before looking: the answers are not in the "
                  "notebooks. On the course site (`" + SITE_COMMAND + "`), each answer is folded under its question "
                  f"on this notebook's page, and the solutions page (`DIR/solutions.html`, section Notebook {key}) "
                  "has them all."]
    return "\n".join(lines)


def show_questions(notebook: str | int):
    """The notebook's questions without their answers, as IPython `Markdown` (a plain string without IPython).
    Introduced in notebook 01."""
    text = questions_markdown(notebook)
    try:
        from IPython.display import Markdown
    except ImportError:  # pragma: no cover - IPython comes with the notebooks' requirements
        return text
    return Markdown(text)
