"""The Kaitai Struct specs ggscope interprets (installed as the package ``ggscope.formats``)."""
