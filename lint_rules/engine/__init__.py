"""The engine: what runs the rules over files, and nothing the rules import.

``run.py`` (``run``, ``run_stdin``, ``Worker``) drives the pipeline: ``discovery.py``
finds the files, ``cache.py`` skips the unchanged ones, ``checker.py`` parses each
file once and walks it once for every selected rule, ``fixes.py`` applies, verifies
and writes fixes, ``settle.py`` keeps a ``fix`` run's renames consistent across
modules; ``results.py`` holds the plain data they share.
"""
