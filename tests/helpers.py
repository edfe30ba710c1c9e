"""Small builders shared by several test files (plain functions; fixtures live in conftest.py)."""
import torch

from course_utils.vocab import EOS_ID, PAD_ID


def random_padded_ids(lengths, vocab_size, seed=0):
    """Random sentences of the given lengths (ids >= 4, last id EOS), PAD-padded: ids (B, S), lengths (B,)."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.full((len(lengths), max(lengths)), PAD_ID)  # (B, S)
    for row, length in enumerate(lengths):
        ids[row, :length - 1] = torch.randint(4, vocab_size, (length - 1,), generator=generator)
        ids[row, length - 1] = EOS_ID
    return ids, torch.tensor(lengths)


def tiny_config(data, attention="bahdanau", hidden=32, **kw):
    """A small ModelConfig for `data`'s vocabularies."""
    from course_utils.seq2seq import ModelConfig

    return ModelConfig(len(data.src_vocab), len(data.tgt_vocab), attention=attention, embedding_size=16,
                       hidden_size=hidden, **kw)


def distinct_sources(pairs, n):
    """The first n pairs whose source sentence appears once (a sentence with two translations can't be overfit)."""
    counts = {}
    for pair in pairs:
        counts[pair.source] = counts.get(pair.source, 0) + 1
    return [pair for pair in pairs if counts[pair.source] == 1][:n]


def fixed_batch(data, pairs):
    """All `pairs` as one padded Batch."""
    from course_utils.data import TranslationDataset, collate_batch

    dataset = TranslationDataset(pairs, data.src_vocab, data.tgt_vocab)
    return collate_batch([dataset[i] for i in range(len(dataset))])


def use_tiny_notebook_models(monkeypatch):
    """Tiny variants of every recipe `pretrain` trains (GRU and Transformer) and of notebook 08's classifiers, so
    that tests of pretrain and of the models archive train in seconds."""
    import dataclasses

    from course_utils import classifier, recipes
    from course_utils.zoo import NOTEBOOK_MODELS

    for name in NOTEBOOK_MODELS:
        transformer = getattr(recipes.RECIPES[name].model, "architecture", "") == "transformer"
        tiny = dict(hidden_size=16, heads=2, ff_size=32, layers=1) if transformer else dict(embedding_size=8,
                                                                                              hidden_size=16)
        monkeypatch.setitem(recipes.RECIPES, name, recipes.RECIPES[name].with_model(**tiny))
    monkeypatch.setattr(classifier, "NOTEBOOK_CLASSIFIERS", {
        label: dataclasses.replace(config, embedding_size=8, hidden_size=8)
        for label, config in classifier.NOTEBOOK_CLASSIFIERS.items()})
