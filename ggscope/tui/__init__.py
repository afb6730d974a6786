"""The interactive browser (``ggscope FILE``): a Textual app over a parsed ModelFile.

Only this package imports ``textual``.  ``run(path)`` opens one file; ``app.GGScopeApp``
is the application, ``widgets/`` the panes (each receives domain objects and posts the
messages of ``messages.py``), ``screens/`` the modal dialogs.
"""
