"""``python -m simworld`` runs the command line."""

from simworld.cli import main

main()
