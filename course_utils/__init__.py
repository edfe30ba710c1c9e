"""course_utils: the tested code behind the *Dissecting Attention* notebooks.

The library is flat and in the notebooks' order, one idea per module. It is not the tooling: the command line
(cli/), the exercises (exercises/) and the README's two commands (bootstrap) sit on top of it, and the offline site
lives outside the package (tools/site).

    01      corpus, vocab, data                        the data path: file -> pairs -> ids -> batches
    02      runtime, encoder, shapes, timing           where code runs; the encoder; shapes and speed
    03-04   attention, decoder, seq2seq, diagrams      the model core: plain step loops, one Translator interface
    04-05   recipes, loss, train, evaluate             training and evaluating; fast/ holds the fast paths, pinned
                                                       to the plain loops by tests
    04-08   checkpoints, zoo                           one file format; every model the notebooks load
    05-07   search, translate, metrics, viz, explorer  decoding and reading attention
    08-10   classifier, transformer, alignment, explanation   further: classification, the Transformer, alignment
    04-10   claims                                     what the notebooks say about trained models
    beside  diagram_layouts, viz_padding, overview, classic (the 2017 tutorial's recipe), linear_attention

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
__version__ = "0.1.0"
