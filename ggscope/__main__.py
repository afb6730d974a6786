"""``python -m ggscope`` runs the command line."""
from ggscope.cli import main

raise SystemExit(main())
