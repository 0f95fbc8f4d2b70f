"""``python -m sediment`` runs the CLI."""

from sediment.cli import main

main()
