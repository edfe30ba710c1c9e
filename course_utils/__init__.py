"""course_utils: the tested code behind the *Dissecting Attention* notebooks.

One module per idea, in the notebooks' order: corpus, vocab and data (01); runtime, encoder and shapes (02);
attention, decoder, seq2seq and diagrams (03, 04); recipes (04, 05); loss, train, evaluate and checkpoints (05);
decode, translate, metrics, viz and explorer (05-07); classifier (08); exercises (all). The command line lives in
__main__, batch_translate and pretrain; the README's two commands in bootstrap; the offline site in site*, slides.
"""
__version__ = "0.1.0"
