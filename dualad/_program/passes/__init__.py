"""Passes over a program: simplification and constant folding, fusion, the memory plan."""
