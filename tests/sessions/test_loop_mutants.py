"""Collects the tests of ``kit_mutants_loops`` (a module the kit self-test also imports,
hence not named ``test_*``): each loop, thread and frozen-server kit test fails its
mutant and passes the correct backend."""

from __future__ import annotations

from .kit_mutants_loops import (
    test_the_correct_backend_passes_the_kit_test,
    test_the_mutant_fails_its_kit_test,
)

__all__ = ["test_the_correct_backend_passes_the_kit_test", "test_the_mutant_fails_its_kit_test"]
