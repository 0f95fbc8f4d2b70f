"""Importing source files into canonical trajectories through importer plugins."""
