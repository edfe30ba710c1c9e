"""The training loop: one step, epochs, determinism, overfitting, time budget, weight averaging, History."""
import math

import pytest
import torch
from helpers import distinct_sources, fixed_batch, tiny_config

from course_utils import train
from course_utils.data import Pair
from course_utils.loss import masked_nll_loss
from course_utils.seq2seq import Seq2Seq
from course_utils.translate import translate


# ---------------------------------------------------------------------------------------------------- loop
def test_one_step_reduces_the_loss_on_a_fixed_batch(tiny_course_data):
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data, dropout=0.0))
    batch = fixed_batch(tiny_course_data, tiny_course_data.splits.train[:8])
    config = train.TrainConfig(learning_rate=1e-2)
    optimizer = train.make_optimizer(model, config)
    before = masked_nll_loss(model(batch.src, batch.src_lengths, batch.tgt).log_probs, batch.tgt).item()
    train.train_epoch(model, [batch], optimizer, config, progress=False)
    after = masked_nll_loss(model(batch.src, batch.src_lengths, batch.tgt).log_probs, batch.tgt).item()
    assert after < before


@pytest.mark.parametrize("attention", ["bahdanau", "general"])
def test_overfitting_a_handful_of_pairs_gives_near_zero_loss_and_exact_translations(tiny_course_data, attention):
    pairs = distinct_sources(tiny_course_data.splits.train, 6)
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data, attention, hidden=48, dropout=0.0))
    batch = fixed_batch(tiny_course_data, pairs)
    config = train.TrainConfig(learning_rate=1e-2, clip=1.0)
    optimizer = train.make_optimizer(model, config)
    for _ in range(120):
        loss = train.train_epoch(model, [batch], optimizer, config, progress=False)
    assert loss < 0.05
    for pair in pairs:
        result = translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, pair.source)
        assert result.text == pair.target


def test_training_is_deterministic_for_a_seed(tiny_course_data):
    def run(seed):
        torch.manual_seed(seed)
        model = Seq2Seq(tiny_config(tiny_course_data, dropout=0.2))
        config = train.TrainConfig(epochs=2, batch_size=8, seed=seed, device="cpu", teacher_forcing_ratio=0.5)
        return train.train(model, tiny_course_data, config, progress=False, log=None)

    first, second, other = run(0), run(0), run(1)
    assert first.train_loss == second.train_loss and first.dev_loss == second.dev_loss
    assert first.train_loss != other.train_loss


def test_train_records_a_history_per_epoch_and_logs_one_line_each(tiny_course_data):
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data))
    lines = []
    history = train.train(model, tiny_course_data, train.TrainConfig(epochs=3, batch_size=16, device="cpu"),
                          progress=False, log=lines.append)
    assert history.epochs == 3 and len(lines) == 3
    for values in (history.train_loss, history.dev_loss, history.dev_bleu, history.epoch_seconds):
        assert len(values) == 3 and all(math.isfinite(v) for v in values)
    assert history.train_loss[-1] < history.train_loss[0]
    assert "dev BLEU" in lines[0]


def test_time_budget_stops_training_early(tiny_course_data):
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data))
    history = train.train(model, tiny_course_data, train.TrainConfig(epochs=50, batch_size=4, time_budget=0.0,
                                                                      device="cpu"), progress=False, log=None)
    assert history.epochs == 1


def test_average_last_leaves_the_mean_of_the_last_epochs_weights(tiny_course_data):
    states = [{"w": torch.tensor([1.0, 2.0]), "n": torch.tensor(3)}, {"w": torch.tensor([3.0, 6.0]),
                                                                        "n": torch.tensor(3)}]
    averaged = train._average_weights(states)
    torch.testing.assert_close(averaged["w"], torch.tensor([2.0, 4.0]))
    assert averaged["n"].dtype == torch.long


def test_history_round_trips_through_plain_types():
    history = train.History([2.5, 1.5], [2.0, 1.8], [10.0, 12.5], [3.0, 2.9])
    as_dict = history.to_dict()
    assert all(type(v) is float for values in as_dict.values() for v in values)
    assert train.History.from_dict(as_dict) == history
    assert history.train_seconds == pytest.approx(5.9)
    with pytest.raises(ValueError, match="unexpected keys"):
        train.History.from_dict({"loss": [1.0]})


def test_subsets_for_fast_mode_are_seeded_samples_not_the_shortest_prefix():
    # The splits keep corpus order (roughly shortest first): a prefix would train and score only short sentences.
    pairs = [Pair("x " * length, "y " * length) for length in range(1, 101)]  # lengths 1..100, in order
    subset = train.sample_pairs(pairs, 10, seed=0)
    assert len(subset) == 10 and len(set(subset)) == 10 and set(subset) <= set(pairs)
    assert subset != pairs[:10] and max(len(p.source) for p in subset) > len(pairs[9].source)
    assert subset == [p for p in pairs if p in subset]  # original order kept
    assert subset == train.sample_pairs(pairs, 10, seed=0) and subset != train.sample_pairs(pairs, 10, seed=1)
    assert train.sample_pairs(pairs, None, seed=0) == pairs and train.sample_pairs(pairs, 500, seed=0) == pairs


class CountingLoader:
    """A loader that counts how often it is iterated (each iteration of a bucketed loader reshuffles)."""

    def __init__(self, batches):
        self.batches, self.iterations = batches, 0

    def __iter__(self):
        self.iterations += 1
        return iter(self.batches)

    def __len__(self):
        return len(self.batches)


@pytest.mark.parametrize("progress", [True, False])
def test_an_epoch_iterates_its_loader_exactly_once(tiny_course_data, progress):
    # tqdm(loader) calls iter(loader) in its constructor: a bucketed loader then shuffled twice per epoch, so
    # epoch e did not use seed + e as BucketBatchSampler promises, and the DataLoader drew extra random numbers.
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data))
    config = train.TrainConfig()
    loader = CountingLoader([fixed_batch(tiny_course_data, tiny_course_data.splits.train[:4])])
    train.train_epoch(model, loader, train.make_optimizer(model, config), config, progress=progress)
    assert loader.iterations == 1


def test_epoch_e_of_training_sees_the_batches_of_sampler_epoch_e(tiny_course_data, monkeypatch):
    from course_utils.data import BucketBatchSampler

    seen = []
    original = BucketBatchSampler.__iter__

    def recording(self):
        if self.shuffle:  # the training loader's sampler (evaluation batches by length without shuffling)
            seen.append(self.epoch)
        return original(self)

    monkeypatch.setattr(BucketBatchSampler, "__iter__", recording)
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data))
    config = train.TrainConfig(epochs=3, eval_bleu=False, max_eval_pairs=4)
    train.train(model, tiny_course_data, config, progress=False, log=None)
    recorded = [0] if torch.cuda.is_available() and config.cuda_graphs else []  # recording CUDA graphs reads epoch 0
    assert seen == recorded + [0, 1, 2]


# ---------------------------------------------------------------------------------------------- issue 11
def grad_norm(model) -> float:
    return float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()
                                                         if p.grad is not None])))


@pytest.mark.parametrize("attention", ["bahdanau", "general", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_train_step_gives_the_loss_and_gradients_of_the_model_forward(tiny_course_data, attention, label_smoothing):
    """train_step's loss reads the fast paths' log-probabilities of the real steps only (packed): the same loss and
    gradients as the masked loss over Seq2Seq.forward's (B, T, V), up to rounding (the step loop: not packed)."""
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data, attention, dropout=0.0))
    batch = fixed_batch(tiny_course_data, tiny_course_data.splits.train[:8])
    assert batch.tgt_lengths.min() < batch.tgt.shape[1]  # padding in the batch
    config = train.TrainConfig(label_smoothing=label_smoothing, clip=0.0, learning_rate=1e-9)
    plain = masked_nll_loss(model(batch.src, batch.src_lengths, batch.tgt).log_probs, batch.tgt,
                            label_smoothing=label_smoothing)
    plain.backward()
    expected = {name: p.grad.clone() for name, p in model.named_parameters()}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # keeps the gradients, changes nothing
    optimizer.zero_grad = lambda set_to_none=True: model.zero_grad(set_to_none=True)
    result = train.train_step(model, batch, optimizer, config)
    nll = masked_nll_loss(model(batch.src, batch.src_lengths, batch.tgt).log_probs, batch.tgt).item()
    assert result.loss == pytest.approx(nll, rel=1e-5)
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.grad, expected[name], msg=lambda m, name=name: f"gradient of {name}: {m}")


def test_train_step_clips_the_gradient_norm_to_config_clip(tiny_course_data):
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data, dropout=0.0))
    batch = fixed_batch(tiny_course_data, tiny_course_data.splits.train[:8])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: the weights stay, only the gradients matter
    train.train_step(model, batch, optimizer, train.TrainConfig(clip=0.0))  # 0 = no clipping
    unclipped = grad_norm(model)
    assert unclipped > 0.1
    train.train_step(model, batch, optimizer, train.TrainConfig(clip=0.05))
    assert grad_norm(model) == pytest.approx(0.05, rel=1e-3)  # clip_grad_norm_ left the gradients this long
    train.train_step(model, batch, optimizer, train.TrainConfig(clip=10 * unclipped))
    assert grad_norm(model) == pytest.approx(unclipped, rel=1e-4)  # a loose clip changes nothing


def test_train_decays_the_learning_rate_after_every_epoch(tiny_course_data, monkeypatch):
    seen = []
    real_epoch = train.train_epoch

    def spy(model, loader, optimizer, config, *args, **kwargs):
        seen.append(optimizer.param_groups[0]["lr"])
        return real_epoch(model, loader, optimizer, config, *args, **kwargs)
    monkeypatch.setattr(train, "train_epoch", spy)
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data))
    config = train.TrainConfig(epochs=3, batch_size=16, learning_rate=1e-2, lr_decay=0.5, device="cpu",
                               eval_bleu=False)
    train.train(model, tiny_course_data, config, progress=False, log=None)
    assert seen == pytest.approx([1e-2, 5e-3, 2.5e-3])


def test_train_refuses_empty_splits_before_training(tiny_course_data, monkeypatch):
    import dataclasses

    monkeypatch.setattr(train, "train_epoch", lambda *args, **kwargs: pytest.fail("trained without a dev set"))
    no_dev = dataclasses.replace(tiny_course_data, splits=tiny_course_data.splits._replace(dev=[]))
    model = Seq2Seq(tiny_config(tiny_course_data))
    with pytest.raises(ValueError, match=r"dev 0.*at least 20"):
        train.train(model, no_dev, train.TrainConfig(epochs=1, device="cpu"), progress=False, log=None)


def test_enough_pairs_problem_counts_usable_pairs(tiny_course_data, tiny_pairs):
    from course_utils.data import course_data_from_pairs

    assert train.enough_pairs_problem(tiny_course_data) is None
    small = course_data_from_pairs(tiny_pairs[:8], seed=0)
    message = train.enough_pairs_problem(small)
    assert "only 8 usable sentence pairs" in message and f"at least {train._MIN_USABLE_PAIRS}" in message
