"""OSML (FAST'23): Models A and B (:mod:`.supervised`, PyTorch MLPs trained on a data set in OSML's layout).

Importing this package loads neither Ray nor RLlib.
"""
