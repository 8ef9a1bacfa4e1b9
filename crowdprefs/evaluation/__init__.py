"""Scoring retrieval systems: measures against ordered lists and level judgments, evaluation
with intervals and tests, significance, power and stability, adaptive-weight means, and
Minimal Test Collections."""
