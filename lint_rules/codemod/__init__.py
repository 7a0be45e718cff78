"""Project-wide renames: references from a type-aware engine, edits with libcst."""
