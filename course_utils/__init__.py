"""course_utils: the tested code behind the *Dissecting Attention* notebooks, flat and in the notebooks' order, one
idea per module. The command line (cli/), the exercises and bootstrap sit on top of it; the site is tools/site.

    01      corpus, vocab, data                        the data path: file -> pairs -> ids -> batches
    02      runtime, encoder, shapes, timing           where code runs; the encoder; shapes and speed
    03-04   attention, decoder, seq2seq, diagrams      the model core: plain step loops, one Translator interface
    04-05   recipes, loss, train, evaluate, fast/      training and evaluating; fast/: fast paths pinned by tests
    04-08   checkpoints, zoo                           one file format; every model the notebooks load
    05-07   search, translate, metrics, viz, explorer  decoding and reading attention
    08-10   classifier, transformer, alignment, explanation   further: classification, the Transformer, alignment
    04-10   claims                                     what the notebooks say about trained models
    beside  diagram_layouts, viz_padding, overview, classic (the 2017 tutorial's recipe), linear_attention

Shape letters, in every docstring and shape comment (tensors are batch-first):
    B   batch size (sentences in a batch); E embedding size
    S   source length: French tokens of the longest sentence, <eos> included; T the same for the English target
    H   hidden size: the decoder's state (the encoder's, per direction)
    K   key size: the encoder's outputs, H (one direction) or 2H (bidirectional); Hq the query's size
    A   attention size: the hidden layer of the additive and concat scorers
    V   vocabulary size (the English one for the decoder's log-probabilities)
"""
__version__ = "0.1.0"
