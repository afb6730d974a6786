"""The bottom layer: mechanisms that know nothing of model files.

``errors`` (the exception classes every layer raises), ``escape`` (the one way file
text is made safe for a terminal, JSON or markup), ``jit`` (numba with its cache in
the user's cache directory), ``perprocess`` (pools, buffers and tables a forked child
makes afresh).  Imports nothing else of ggscope.
"""
