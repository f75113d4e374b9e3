"""``python -m simworld`` runs the command line."""

from simworld._edges.cli import main

main()
