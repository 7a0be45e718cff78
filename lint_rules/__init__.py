"""Lint rules and codemods ruff, typos and mypy cannot express (``python -m lint_rules``).

The layout follows the pipeline (data flows one way, arrows point down)::

    __main__.py, quick.py a ``check`` whose recorded run still holds, replayed before the
                          command line loads (imports only os, sys, marshal)
    cli.py                the command line: output, exit codes (a plain ``check FILE...``
                          read without argparse)
    arguments.py          argparse's parser of every command
    protocols.py          the ``protocols`` command (mypy-backed conformance)
    config.py             [tool.lint_rules] of the nearest pyproject.toml, strict
    engine/               discovery, cache, per-file checker, parallel map, fixes
                          (apply, verify, atomic write), cross-module settling, results
    rules/                one module per rule: docs, VALID/INVALID examples, visitors
    rule.py               the Rule API (its docstring is the guide to writing a rule)
    codemod/              renames: what a ``renames`` entry targets, the edits for it
    analysis/             the run's ``Project``, declarations, receivers, ownership,
                          protocol implementations, the typos runner
    output/               report formats (text, json, github, sarif), rule docs
    timing.py             where a run's time goes, by phase

Rules, ``analysis/`` and ``codemod/`` never import ``engine/``; project state lives in
the run's ``Project`` (``analysis/project.py``), never in module-level registries
(``tests/lint_rules/test_layout.py`` holds both).
"""
