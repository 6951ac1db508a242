"""The commands whose options and output live outside cli.py (which registers them)."""
