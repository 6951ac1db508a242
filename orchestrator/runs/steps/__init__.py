"""The steps of one watcher pass over one run, one concern a module; `runs/tick.py` holds their order."""
