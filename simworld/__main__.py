"""``python -m simworld`` runs the command line."""

from simworld._edges.launch import main

main()
