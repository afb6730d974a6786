"""The panes of the browser; each receives domain objects and posts ``messages``."""
