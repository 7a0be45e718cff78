"""A private name renamed with every reference in its scope, on libcst's scope analysis.

``ScopeRenamer`` tells what each identifier of a file names (``binding``: a local, a
parameter, a private module or class member, a public name, another module's name)
and, for a private one, the edits that rename it everywhere it is bound the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst
from libcst.metadata import (
    Assignment,
    BuiltinScope,
    ClassScope,
    FunctionScope,
    GlobalScope,
    Scope,
)

from lint_rules.codemod.renamer import rename_refusal, shadowing
from lint_rules.codemod.scopes import FileScopes
from lint_rules.rule import Edit, is_private

if TYPE_CHECKING:
    from lint_rules.rule import FileContext


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

    def __init__(self, file: FileContext, string_values: Sequence[str]) -> None:
        self.file = file
        self.text = file.text
        self.string_values = string_values
        """The value of every string literal (f-strings: their literal parts)."""
        self.scopes = FileScopes(file)
        self.parents = self.scopes.parents
        self.names = self.scopes.names

    def name_at(self, offset: int) -> libcst.Name | None:
        """The name node that starts at character ``offset``, if any."""
        return self.scopes.name_at(offset)

    def binding(self, node: libcst.Name) -> Binding:
        """What ``node`` names: its kind, whether it is private, and where it is bound."""
        parent = self.parents[node]
        name = node.value
        if isinstance(parent, libcst.Attribute) and parent.attr is node:
            owner = self.scopes.enclosing_class(node)
            if is_private(name) and owner is not None:
                return Binding("private class member", True, class_node=owner)
            return Binding("attribute", False)
        if isinstance(parent, libcst.Arg) and parent.keyword is node:
            return Binding("keyword argument", False)
        if not isinstance(parent, libcst.AsName) and self.scopes.in_import(node):
            return Binding("imported name", False)
        scope = self.scopes.scope_of(node)
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
        return isinstance(self.scopes.scopes.get(function), FunctionScope)  # a nested function

    def _overriding(self, class_node: libcst.ClassDef, new: str) -> str:
        """Why a member ``new`` of ``class_node`` may override (or be overridden by) one of
        another class: a base class defines it, or another file of the project binds it
        (a subclass there may define it)."""
        from lint_rules.analysis.inheritance import base_definition

        reason = base_definition(self.file, self.scopes.offset_of(class_node.name), new)
        if reason:
            return reason
        if self.file.project.names.binds(new):
            return (
                f"`{new}` is also bound in another file of the project (a subclass may define it)"
            )
        return ""

    def rename(
        self, node: libcst.Name, binding: Binding, old: str, new: str
    ) -> tuple[list[Edit], str]:
        """The edits renaming ``old`` to ``new`` at every use bound as ``node`` is.

        Returns no edits and the reason when the rename is refused.
        """
        names = {candidate.value for candidate in self.names.values()}
        refusal = rename_refusal(old, new, names, self.string_values) or shadowing(new, self.file)
        if not refusal and binding.class_node is not None:
            refusal = self._overriding(binding.class_node, new)
        if refusal:
            return [], refusal
        targets: list[libcst.Name] = []
        for candidate in self.names.values():
            if candidate.value != old:
                continue
            parent = self.parents[candidate]
            if isinstance(parent, libcst.Attribute) and parent.attr is candidate:
                if binding.class_node is None:
                    continue
                if self.scopes.enclosing_class(candidate) is not binding.class_node:
                    return [], f"`.{old}` is also used outside its class"
                targets.append(candidate)
                continue
            if isinstance(parent, libcst.Arg) and parent.keyword is candidate:
                return [], f"`{old}` is also passed as a keyword argument"
            if not isinstance(parent, libcst.AsName) and self.scopes.in_import(candidate):
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
            offset = self.scopes.offset_of(target)
            if self.text[offset : offset + len(old)] != old:
                return [], "the name could not be located exactly"
            edits.append(Edit(offset, offset + len(old), new))
        return sorted(edits, key=lambda edit: edit.start), ""
