"""Renames: what a configured rename targets, and the edits that carry it out.

Nothing here imports the engine (the engine applies and verifies the edits).
"""
