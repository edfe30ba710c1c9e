"""The answer key: one reference solution per checker, written as a student should (none calls a function its
exercise forbids). `SOLUTIONS` maps each checker's name to its solution."""
from __future__ import annotations

import math
import re
from collections.abc import Callable

import torch

from course_utils import data
from course_utils.vocab import EOS_ID, PAD_ID, SOS_ID, UNK_ID, Vocab


# ---------------------------------------------------------------------------------------------- notebook 01
def normalize(s: str) -> str:
    """Lower case, no accents, a space before . ! ?, other non-letters -> one space."""
    s = data.unicode_to_ascii(s.lower().strip())
    s = re.sub(r"([.!?])", r" \1", s)
    return re.sub(r"[^a-zA-Z.!?]+", " ", s).strip()


def encode(vocab: Vocab, sentence: str) -> list[int]:
    """The word ids (UNK_ID for unknown words), then EOS_ID."""
    words = sentence.split(" ") if sentence else []
    return [vocab.word2index.get(word, UNK_ID) for word in words] + [EOS_ID]


def pad_fraction(batch: data.Batch) -> float:
    """The share of <pad> among the B * S positions of batch.src, from the lengths."""
    return 1 - batch.src_lengths.sum().item() / batch.src.numel()


# ---------------------------------------------------------------------------------------------- notebook 02
def embedding_lookup(ids: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """ids (*) -> (*, E) as a one-hot product."""
    one_hot = torch.nn.functional.one_hot(ids, num_classes=weight.shape[0]).float()  # (*) -> (*, V)
    return one_hot @ weight  # (*, V) @ (V, E) -> (*, E)


def gru_step(x: torch.Tensor, h: torch.Tensor, weight_ih: torch.Tensor, weight_hh: torch.Tensor,
             bias_ih: torch.Tensor, bias_hh: torch.Tensor) -> torch.Tensor:
    """One GRU step from the gate equations (PyTorch's row order r, z, n): (B, E), (B, H) -> (B, H)."""
    i_r, i_z, i_n = (x @ weight_ih.T + bias_ih).chunk(3, dim=-1)  # (B, 3H) -> 3 x (B, H)
    h_r, h_z, h_n = (h @ weight_hh.T + bias_hh).chunk(3, dim=-1)  # (B, 3H) -> 3 x (B, H)
    r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)  # r multiplies W_hn h + b_hn
    return (1 - z) * n + z * h


def final_state(outputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each row's output at its last real position: (B, S, H), (B,) -> (B, H)."""
    index = (lengths - 1).view(-1, 1, 1).expand(-1, 1, outputs.shape[-1])  # (B,) -> (B, 1, H)
    return outputs.gather(1, index).squeeze(1)  # (B, 1, H) -> (B, H)


# ---------------------------------------------------------------------------------------------- notebook 03
def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the real positions, max subtracted: (B, S), (B, S) bool -> (B, S), exactly 0 at pads."""
    scores = scores.masked_fill(~mask, float("-inf"))  # exp(-inf) = 0 at the pads
    exps = (scores - scores.max(dim=-1, keepdim=True).values).exp()  # (B, S) - (B, 1): every exp <= 1
    return exps / exps.sum(dim=-1, keepdim=True)  # (B, S) / (B, 1)


def dot_attention(query: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, K), (B, S, K), (B, S) -> (context (B, K), weights (B, S)) with the score q^T k."""
    scores = torch.einsum("bk,bsk->bs", query, keys)  # (B, S)
    weights = masked_softmax(scores, mask)  # (B, S)
    return torch.einsum("bs,bsk->bk", weights, keys), weights  # (B, K), (B, S)


def context(weights: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """The weighted sum of the keys: (B, S), (B, S, K) -> (B, K)."""
    return torch.einsum("bs,bsk->bk", weights, keys)  # (B, K)


# ---------------------------------------------------------------------------------------------- notebook 04
def general_score(query: torch.Tensor, keys: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """q^T W k with W = weight.T: (B, T, Hq), (B, S, K), (K, Hq) -> (B, T, S)."""
    return torch.einsum("bth,kh,bsk->bts", query, weight, keys)  # (B, T, S)


def bahdanau_score(query: torch.Tensor, keys: torch.Tensor, W: torch.Tensor, U: torch.Tensor,
                   v: torch.Tensor) -> torch.Tensor:
    """v^T tanh(W q + U k): (B, T, Hq), (B, S, K), (A, Hq), (A, K), (A,) -> (B, T, S)."""
    energies = (query @ W.T).unsqueeze(2) + (keys @ U.T).unsqueeze(1)  # (B, T, 1, A) + (B, 1, S, A) -> (B, T, S, A)
    return torch.tanh(energies) @ v  # (B, T, S, A) @ (A,) -> (B, T, S)


def attention_parameters(kind: str, query_size: int, key_size: int, attention_size: int) -> int:
    """The parameters of make_attention(kind, ...), counted from the modules (no biases)."""
    counts = {"bahdanau": attention_size * (query_size + key_size) + attention_size,  # W (A, Hq), U (A, K), v (A)
              "general": key_size * query_size,  # one (K, Hq) matrix
              "concat": attention_size * (query_size + key_size) + attention_size,  # W (A, Hq + K), v (A)
              "dot": 0, "scaled_dot": 0}  # q^T k: nothing to learn
    return counts[kind]


# ---------------------------------------------------------------------------------------------- notebook 05
def masked_nll(log_probs: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """The mean NLL of the real target tokens: (B, T, V), (B, T) -> a scalar."""
    gold = log_probs.gather(-1, tgt.unsqueeze(-1)).squeeze(-1)  # (B, T, 1) -> (B, T)
    real = tgt != PAD_ID  # (B, T)
    return -gold[real].sum() / real.sum()  # (N,) real positions -> a scalar


def greedy_decode(model, src_ids: torch.Tensor, max_length: int) -> list[int]:
    """Greedy decoding of one sentence src_ids (S,) as a loop over model.decoder.step; EOS included."""
    memory, state = model.encode(src_ids.unsqueeze(0), torch.tensor([len(src_ids)]))  # src (1, S)
    prev, output = torch.tensor([SOS_ID]), []  # (1,)
    for _ in range(max_length):
        step = model.decoder.step(prev, state, memory)
        prev, state = step.log_probs.argmax(-1), step.state  # (1, V) -> (1,)
        output.append(prev.item())
        if output[-1] == EOS_ID:
            break
    return output


def perplexity(batch_losses: list[float], batch_tokens: list[int]) -> float:
    """exp of the token-weighted mean loss of the batches."""
    total_nll = sum(loss * n for loss, n in zip(batch_losses, batch_tokens, strict=True))  # summed NLL per batch
    return math.exp(total_nll / sum(batch_tokens))  # exp of the mean NLL per token


# ---------------------------------------------------------------------------------------------- notebook 06
def attention_entropy(weights: torch.Tensor) -> torch.Tensor:
    """H_t = -sum_j w_tj log w_tj in nats, 0 log 0 = 0: (T, S) -> (T,)."""
    return -torch.special.xlogy(weights, weights).sum(-1)  # (T, S) -> (T,)


def argmax_alignment(weights: torch.Tensor, source_tokens: list[str]) -> list[str]:
    """The source token each output step attends to most: (T, S) -> T tokens."""
    return [source_tokens[j] for j in weights.argmax(dim=-1).tolist()]  # (T, S) -> (T,)


def diagonal_deviation(weights: torch.Tensor) -> float:
    """Mean over t of sum_j w_tj |q_j - p_t| with cell-centre positions."""
    T, S = weights.shape
    p = (torch.arange(T) + 0.5) / T  # (T,) output positions, cell centres
    q = (torch.arange(S) + 0.5) / S  # (S,) source positions
    distance = (q[None, :] - p[:, None]).abs()  # (1, S) - (T, 1) -> (T, S)
    return float((weights * distance).sum(-1).mean())  # (T, S) -> (T,) -> one number


# ---------------------------------------------------------------------------------------------- notebook 07
def sampling_distribution(log_probs: torch.Tensor, temperature: float, top_k: int | None) -> torch.Tensor:
    """softmax(log_probs / temperature) over the top_k best tokens of each row: (B, V) -> (B, V)."""
    scaled = log_probs / temperature  # (B, V)
    if top_k is not None:
        kth_best = scaled.topk(top_k, dim=-1).values[:, -1:]  # (B, 1) the k-th largest of each row
        scaled = scaled.masked_fill(scaled < kth_best, -math.inf)
    return scaled.softmax(dim=-1)


def beam_step(alive_log_probs: torch.Tensor, step_log_probs: torch.Tensor, open_slots: int):
    """The open_slots best extensions of N hypotheses by total log-probability: (N,), (N, V) -> 3 x (n,)."""
    vocab_size = step_log_probs.size(1)
    candidates = (alive_log_probs[:, None] + step_log_probs).reshape(-1)  # (N, V) -> (N * V,)
    top_log_probs, index = candidates.topk(open_slots)  # (n,)
    return top_log_probs, index // vocab_size, index % vocab_size


def replace_unknown(output_tokens: list[str], source_tokens: list[str], attention: torch.Tensor) -> list[str]:
    """Each <unk> replaced by the most attended source word (<eos> and punctuation left out)."""
    words = [j for j in range(len(source_tokens) - 1) if any(c.isalnum() for c in source_tokens[j])]  # no <eos>
    aligned = attention[:, words].argmax(dim=-1).tolist()  # (T, S') -> (T,)
    return [source_tokens[words[aligned[t]]] if token == "<unk>" else token for t, token in enumerate(output_tokens)]


# ---------------------------------------------------------------------------------------------- notebook 08
def sparsity(gates: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The mean over sentences of the fraction of their words kept: (B, S), (B, S) -> scalar."""
    return ((gates * mask).sum(dim=1) / mask.sum(dim=1)).mean()  # (B,) -> scalar


def rationale_precision_recall(selected: torch.Tensor, gold: torch.Tensor, mask: torch.Tensor) -> tuple[float, float]:
    """Precision and recall of the selected words, over the words of the sentences with a gold word."""
    has_gold = gold.any(dim=1, keepdim=True)  # (B, 1)
    chosen = selected & mask & has_gold  # (B, S)
    hits = (chosen & gold).sum().item()
    return hits / max(chosen.sum().item(), 1), hits / max((gold & mask).sum().item(), 1)


def bag_of_words_logits(words: torch.Tensor, mask: torch.Tensor, word_scores: torch.Tensor,
                        bias: torch.Tensor) -> torch.Tensor:
    """counts (B, V) @ word_scores (V, C) + bias, padding not counted."""
    counts = torch.zeros(words.shape[0], word_scores.shape[0])  # (B, V)
    counts.scatter_add_(1, words, mask.float())  # each word's count; a pad adds 0
    return counts @ word_scores + bias  # (B, C)


SOLUTIONS: dict[str, Callable[..., object]] = {
    "check_normalize": normalize, "check_encode": encode, "check_pad_fraction": pad_fraction,
    "check_embedding_lookup": embedding_lookup, "check_gru_step": gru_step, "check_final_state": final_state,
    "check_masked_softmax": masked_softmax, "check_dot_attention": dot_attention, "check_context": context,
    "check_general_score": general_score, "check_bahdanau_score": bahdanau_score,
    "check_attention_parameters": attention_parameters,
    "check_masked_nll": masked_nll, "check_greedy_decode": greedy_decode, "check_perplexity": perplexity,
    "check_attention_entropy": attention_entropy, "check_argmax_alignment": argmax_alignment,
    "check_diagonal_deviation": diagonal_deviation,
    "check_sampling_distribution": sampling_distribution, "check_beam_step": beam_step,
    "check_replace_unknown": replace_unknown,
    "check_sparsity": sparsity, "check_rationale_precision_recall": rationale_precision_recall,
    "check_bag_of_words_logits": bag_of_words_logits,
}
