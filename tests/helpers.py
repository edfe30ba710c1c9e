"""Small builders shared by several test files (plain functions; fixtures live in conftest.py)."""
import torch

from course_utils.data import EOS_ID, PAD_ID


def random_padded_ids(lengths, vocab_size, seed=0):
    """Random sentences of the given lengths (ids >= 4, last id EOS), PAD-padded: ids (B, S), lengths (B,)."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.full((len(lengths), max(lengths)), PAD_ID)  # (B, S)
    for row, length in enumerate(lengths):
        ids[row, :length - 1] = torch.randint(4, vocab_size, (length - 1,), generator=generator)
        ids[row, length - 1] = EOS_ID
    return ids, torch.tensor(lengths)
