"""Modal dialogs of the browser (go to offset, search)."""
