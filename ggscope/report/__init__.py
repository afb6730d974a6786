"""Renderers: turn results into text, JSON, SARIF or annotations.  They never judge."""
