"""The detection benchmark: labelled scenario families, baselines, ablation."""
