"""libcst's scope analysis of one file, with the lookups every rename needs.

``FileScopes`` resolves the scope, parent and position metadata of a file once
(one ``resolve_many`` call, so that libcst batches the providers), indexes its
``Name`` nodes by character offset, and answers what the renames ask: the name at
an offset, the scope a node is in, whether it sits in an import, its enclosing
class or other ancestor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeVar, cast

import libcst
from libcst.metadata import CodeRange, ParentNodeProvider, PositionProvider, Scope, ScopeProvider

if TYPE_CHECKING:
    from lint_rules.rule import FileContext

_Node = TypeVar("_Node", bound=libcst.CSTNode)


class FileScopes:
    """Scopes, parents and the ``Name`` nodes (by offset) of one file's libcst tree."""

    def __init__(self, file: FileContext) -> None:
        self.file = file
        resolved = file.cst_wrapper.resolve_many(
            [ScopeProvider, ParentNodeProvider, PositionProvider]
        )
        self.scopes = cast("Mapping[libcst.CSTNode, Scope | None]", resolved[ScopeProvider])
        self.parents = cast("Mapping[libcst.CSTNode, libcst.CSTNode]", resolved[ParentNodeProvider])
        positions = cast("Mapping[libcst.CSTNode, CodeRange]", resolved[PositionProvider])
        starts = file.line_starts
        self.names: dict[int, libcst.Name] = {}
        """Every ``Name`` node, by the character offset where it starts."""
        for node, where in positions.items():
            if isinstance(node, libcst.Name):
                self.names[starts[where.start.line - 1] + where.start.column] = node
        self._offsets = {id(node): offset for offset, node in self.names.items()}

    def name_at(self, offset: int) -> libcst.Name | None:
        """The name node that starts at character ``offset``, if any."""
        return self.names.get(offset)

    def offset_of(self, node: libcst.Name) -> int:
        """Where a name node of this file starts (character offset)."""
        return self._offsets[id(node)]

    def scope_of(self, node: libcst.CSTNode) -> Scope | None:
        """The scope ``node`` is in: its own, or its nearest ancestor's."""
        current: libcst.CSTNode | None = node
        while current is not None:
            scope = self.scopes.get(current)
            if scope is not None:
                return scope
            current = self.parents.get(current)
        return None

    def in_import(self, node: libcst.CSTNode) -> bool:
        """Whether ``node`` is part of an ``import`` or ``from ... import`` statement."""
        current = self.parents.get(node)
        while current is not None:
            if isinstance(current, (libcst.Import, libcst.ImportFrom)):
                return True
            if isinstance(current, (libcst.BaseSmallStatement, libcst.BaseStatement)):
                return False
            current = self.parents.get(current)
        return False

    def ancestor(self, node: libcst.CSTNode, kind: type[_Node]) -> _Node | None:
        """The nearest ancestor of ``node`` of type ``kind``."""
        current = self.parents.get(node)
        while current is not None:
            if isinstance(current, kind):
                return current
            current = self.parents.get(current)
        return None

    def enclosing_class(self, node: libcst.CSTNode) -> libcst.ClassDef | None:
        """The class whose body (at any depth) holds ``node``."""
        return self.ancestor(node, libcst.ClassDef)
