"""Custom libcst lint rules and codemods (`python -m lint_rules check|fix`)."""
