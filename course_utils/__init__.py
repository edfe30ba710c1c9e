"""course_utils: the tested code behind the *Dissecting Attention* notebooks.

The library is flat and in the notebooks' order, one idea per module:

    01      corpus, vocab, data                                  the data path: file -> pairs -> ids -> batches
    02      runtime, encoder, shapes, timing                     where code runs; the encoder; shapes and speed
    03-04   attention, decoder, seq2seq, diagrams, diagram_layouts   the model core
    04-05   recipes, loss, train, cuda_graphs, evaluate, checkpoints  training, evaluating, saving
    05-07   search (the decoding algorithms), translate, metrics, viz, viz_padding, explorer
    08      classifier                                           attention for classification
    04-08   claims                                               what the notebooks say about trained models
    all     exercises/                                           one module of self-checks per notebook

The course's tooling uses the library and is used by no notebook: cli/ (the command line `python -m course_utils`,
batch translation, pretrain and the class's model archive), site/ (the offline site and the slides: build, export,
pages, offline check, slides, static files), bootstrap (the README's two commands).

Shape letters, in every docstring and shape comment (tensors are batch-first):

    B   batch size (sentences in a batch)
    S   source length: French tokens of the longest sentence, <eos> included
    T   target length: English tokens, <eos> included
    E   embedding size
    H   hidden size: the decoder's state (the encoder's, per direction)
    K   key size: the encoder's outputs, H (one direction) or 2H (bidirectional); Hq the query's size
    A   attention size: the hidden layer of the additive and concat scorers
    V   vocabulary size (the English one for the decoder's log-probabilities)
"""
import os as _os
import sys as _sys

__version__ = "0.1.0"

# Waiting OpenMP threads sleep instead of spinning (unless the environment says otherwise), so that two trainings on
# one machine share its cores instead of slowing each other tenfold (benchmarks/results/contention.md). OpenMP reads
# the setting once, when torch loads it: importing course_utils before torch, as every notebook does, is in time.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
_TORCH_LOADED_FIRST = "torch" in _sys.modules  # then OpenMP had already read its settings (runtime.wait_policy)
