"""The template family (GG13xx): what a file's chat templates execute, refuse or hide.

Modules, lowest first: ``context`` (the names runtimes provide, the keys that carry
templates or prose), ``engine`` (transformers' Jinja2 environment), ``fold`` (strings a
template builds), ``analysis`` (the syntax-tree walk), ``sandbox`` (the bounded render),
``hidden`` (invisible characters, planted instructions), ``sources`` (one parse and one
render per template, shared) and ``rules`` (the rule classes).
"""
from ggscope.rules.templates.rules import RULES

__all__ = ["RULES"]
