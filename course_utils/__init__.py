"""course_utils: the tested code behind the *Dissecting Attention* notebooks.

One module per idea, in the notebooks' order: data (01), encoder (02), attention and decoder (03, 04),
seq2seq, train and decode (05), metrics, viz and explorer (06).
"""
__version__ = "0.1.0"
