"""Scope-aware renames with libcst: what an identifier names, and every use to rename with it."""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import libcst
from libcst.metadata import (
    Assignment,
    BuiltinScope,
    ClassScope,
    CodeRange,
    FunctionScope,
    GlobalScope,
    ParentNodeProvider,
    PositionProvider,
    Scope,
    ScopeProvider,
)

from lint_rules.rule import Edit, is_private


def _imported_without_alias(node: libcst.CSTNode, name: str) -> bool:
    """Whether ``node`` imports ``name`` under the other module's own spelling."""
    if not isinstance(node, (libcst.Import, libcst.ImportFrom)) or isinstance(
        node.names, libcst.ImportStar
    ):
        return False
    return any(
        alias.asname is None and alias.evaluated_name.split(".")[0] == name for alias in node.names
    )


@dataclass(frozen=True)
class Binding:
    """What an identifier names: its kind, whether it is private, where it is bound."""

    kind: str
    private: bool
    scope: Scope | None = None
    class_node: libcst.ClassDef | None = None


class ScopeRenamer:
    """What each identifier in one file names, and the edits that rename a private one."""

    def __init__(
        self, text: str, wrapper: libcst.MetadataWrapper, string_values: list[str]
    ) -> None:
        self.text = text
        self.string_values = string_values
        """The value of every string literal (f-strings: their literal parts)."""
        # One call, so that libcst batches the providers that can share a traversal.
        resolved = wrapper.resolve_many([ScopeProvider, ParentNodeProvider, PositionProvider])
        self.scopes = cast("Mapping[libcst.CSTNode, Scope | None]", resolved[ScopeProvider])
        self.parents = cast("Mapping[libcst.CSTNode, libcst.CSTNode]", resolved[ParentNodeProvider])
        positions = cast("Mapping[libcst.CSTNode, CodeRange]", resolved[PositionProvider])
        line_starts = [0, *(match.end() for match in re.finditer(r"\r\n?|\n", text))]
        self.names: dict[int, libcst.Name] = {}
        for node, where in positions.items():
            if isinstance(node, libcst.Name):
                self.names[line_starts[where.start.line - 1] + where.start.column] = node
        self.offsets = {id(node): offset for offset, node in self.names.items()}

    def name_at(self, offset: int) -> libcst.Name | None:
        """The name node that starts at character ``offset``, if any."""
        return self.names.get(offset)

    def binding(self, node: libcst.Name) -> Binding:
        """What ``node`` names: its kind, whether it is private, and where it is bound."""
        parent = self.parents[node]
        name = node.value
        if isinstance(parent, libcst.Attribute) and parent.attr is node:
            owner = self._enclosing_class(node)
            if is_private(name) and owner is not None:
                return Binding("private class member", True, class_node=owner)
            return Binding("attribute", False)
        if isinstance(parent, libcst.Arg) and parent.keyword is node:
            return Binding("keyword argument", False)
        if not isinstance(parent, libcst.AsName) and self._in_import(node):
            return Binding("imported name", False)
        scope = self._scope_of(node)
        if scope is None:
            return Binding("name", False)
        assignments = list(scope[name])
        scopes = {id(assignment.scope): assignment.scope for assignment in assignments}
        if len(scopes) != 1:
            return Binding("name", False)  # undefined, or bound in several places
        bound = next(iter(scopes.values()))
        if isinstance(bound, BuiltinScope):
            return Binding("builtin", False)
        nodes = [a.node for a in assignments if isinstance(a, Assignment)]
        if any(_imported_without_alias(node, name) for node in nodes):
            return Binding("imported name", False)
        if isinstance(bound, GlobalScope):
            if is_private(name):
                return Binding("private module member", True, bound)
            return Binding(self._public_kind(nodes, "public module member"), False)
        if isinstance(bound, ClassScope) and isinstance(bound.node, libcst.ClassDef):
            if is_private(name):
                return Binding("private class member", True, bound, bound.node)
            return Binding(self._public_kind(nodes, "public class member"), False)
        parameters = [node for node in nodes if isinstance(node, libcst.Param)]
        if not parameters:
            return Binding("local", True, bound)
        function = bound.node if isinstance(bound, FunctionScope) else None
        if self._parameter_is_private(parameters, function):
            return Binding("parameter", True, bound)
        return Binding("public parameter", False)

    def _public_kind(self, nodes: Sequence[libcst.CSTNode], default: str) -> str:
        for node in nodes:
            if isinstance(node, libcst.FunctionDef):
                return "public function" if default.endswith("module member") else "public method"
            if isinstance(node, libcst.ClassDef):
                return "public class"
        return default

    def _parameter_is_private(
        self, parameters: list[libcst.Param], function: libcst.CSTNode | None
    ) -> bool:
        if not isinstance(function, libcst.FunctionDef):
            return False  # a lambda's parameters can be passed by keyword
        arguments = function.params
        if all(
            param in arguments.posonly_params
            or param is arguments.star_arg
            or param is arguments.star_kwarg
            for param in parameters
        ):
            return True  # never passed by keyword
        if is_private(function.name.value):
            return True
        return isinstance(self.scopes.get(function), FunctionScope)  # a nested function

    def rename(
        self, node: libcst.Name, binding: Binding, old: str, new: str
    ) -> tuple[list[Edit], str]:
        """The edits renaming ``old`` to ``new`` at every use bound as ``node`` is.

        Returns no edits and the reason when the rename is refused.
        """
        if not new.isidentifier() or keyword.iskeyword(new):
            return [], f"`{new}` is not an identifier"
        if any(candidate.value == new for candidate in self.names.values()):
            return [], f"`{new}` already exists in this file"
        word = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)")
        if any(word.search(value) for value in self.string_values):
            return [], f"`{old}` also appears in a string (e.g. an annotation or `__all__`)"
        targets: list[libcst.Name] = []
        for candidate in self.names.values():
            if candidate.value != old:
                continue
            parent = self.parents[candidate]
            if isinstance(parent, libcst.Attribute) and parent.attr is candidate:
                if binding.class_node is None:
                    continue
                if self._enclosing_class(candidate) is not binding.class_node:
                    return [], f"`.{old}` is also used outside its class"
                targets.append(candidate)
                continue
            if isinstance(parent, libcst.Arg) and parent.keyword is candidate:
                return [], f"`{old}` is also passed as a keyword argument"
            if not isinstance(parent, libcst.AsName) and self._in_import(candidate):
                continue  # another module's name
            candidate_binding = self.binding(candidate)
            if binding.scope is not None:
                same = candidate_binding.scope is binding.scope
            else:  # a class member known from its attribute uses only
                same = candidate_binding.class_node is binding.class_node
            if same:
                targets.append(candidate)
        edits = []
        for target in targets:
            offset = self.offsets[id(target)]
            if self.text[offset : offset + len(old)] != old:
                return [], "the name could not be located exactly"
            edits.append(Edit(offset, offset + len(old), new))
        return sorted(edits, key=lambda edit: edit.start), ""

    def _scope_of(self, node: libcst.CSTNode) -> Scope | None:
        current: libcst.CSTNode | None = node
        while current is not None:
            scope = self.scopes.get(current)
            if scope is not None:
                return scope
            current = self.parents.get(current)
        return None

    def _in_import(self, node: libcst.CSTNode) -> bool:
        current = self.parents.get(node)
        while current is not None:
            if isinstance(current, (libcst.Import, libcst.ImportFrom)):
                return True
            if isinstance(current, (libcst.BaseSmallStatement, libcst.BaseStatement)):
                return False
            current = self.parents.get(current)
        return False

    def _enclosing_class(self, node: libcst.CSTNode) -> libcst.ClassDef | None:
        current = self.parents.get(node)
        while current is not None:
            if isinstance(current, libcst.ClassDef):
                return current
            current = self.parents.get(current)
        return None
