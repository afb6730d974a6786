"""The template family (GG13xx): what a file's chat templates execute, refuse or hide.

Modules, lowest first: ``context`` (the names runtimes provide, the keys that carry
templates or prose), ``sizes`` and ``budget`` (the limits of a render in this process),
``engine`` (transformers' Jinja2 environment, with the budget's hooks), ``fold`` (strings
a template builds), ``macros`` and ``analysis`` (the syntax-tree walk), ``sandbox`` (the
forked, rlimit-capped render), ``hidden`` (invisible characters, planted instructions),
``sources`` (one parse and one render per template, shared), and the rules:
``template_code`` (GG1301-GG1307: what a runtime executes or refuses) and
``template_text`` (GG1308-GG1311: what it relies on, and text that hides).
"""
from ggscope.rules.templates import template_code, template_text

RULES = [*template_code.RULES, *template_text.RULES]

__all__ = ["RULES"]
