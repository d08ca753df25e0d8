"""Predictions and results files, the paper's metrics, few-shot baselines, cascaded runs and the
results table."""
