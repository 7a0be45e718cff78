"""Qualified renames (``module:name``, ``module:Class.name``, ``module:function(kw)``)
decided on libcst's scopes and qualified names: which occurrences of the old
spelling are the configured target's, and which would clash if renamed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst
from libcst.metadata import (
    Access,
    Assignment,
    BaseAssignment,
    BuiltinAssignment,
    ClassScope,
    FunctionScope,
    GlobalScope,
    QualifiedNameSource,
    Scope,
)

from lint_rules.analysis.consistency import absolute_module, module_name
from lint_rules.analysis.renames import Target
from lint_rules.codemod.scopes import FileScopes

if TYPE_CHECKING:
    from lint_rules.rule import FileContext


@dataclass(frozen=True)
class Decision:
    """What to do with one occurrence: rename it (no ``reason``) or report why not."""

    old: str
    new: str
    reason: str = ""


class Resolver:
    """Scope and qualified-name analysis (libcst) of one file, built only when needed."""

    def __init__(self, file: FileContext) -> None:
        self.file = file
        self.module = module_name(file.path) if file.path.suffix == ".py" else ""
        self.scopes = FileScopes(file)
        self.parents = self.scopes.parents

    def decide(
        self, old: str, start: int, kind: str, targets: Sequence[Target]
    ) -> Iterator[Decision]:
        """The decisions for an occurrence of ``old`` at ``start`` that one of ``targets``
        (qualified ones, renaming ``old``) may name: the first one counts."""
        node = self.scopes.name_at(start)
        if node is None:  # e.g. a name libcst places differently
            return
        parent = self.parents.get(node)
        if (
            kind == "import"
            or isinstance(parent, libcst.ImportAlias)
            or self.scopes.in_import(node)
        ):
            yield from self._import(node, old, targets)
        elif isinstance(parent, libcst.Attribute) and parent.attr is node:
            yield from self._attribute(parent, old, targets)
        elif isinstance(parent, libcst.Arg) and parent.keyword is node:
            yield from self._keyword(parent, old, targets)
        elif kind != "declaration":  # `global old` follows the module-level binding
            yield from self._name(node, parent, old, targets)

    # -- occurrences --------------------------------------------------------------------------

    def _import(self, node: libcst.Name, old: str, targets: Sequence[Target]) -> Iterator[Decision]:
        alias = self.scopes.ancestor(node, libcst.ImportAlias)
        statement = self.scopes.ancestor(node, libcst.ImportFrom)
        local = alias is not None and alias.asname is None and alias.name is node
        if alias is not None and alias.asname is not None and node is alias.asname.name:
            yield from self._name(node, self.parents.get(node), old, targets)
            return
        if statement is None or alias is None or alias.name is not node:
            return
        source = self._absolute_module(statement)
        for target in targets:
            if target.kind == "attribute" and source == target.module:
                reason = self._binding_clash(node, old, target.new) if local else ""
                yield Decision(target.shown, target.new, reason)

    def _attribute(
        self, attribute: libcst.Attribute, old: str, targets: Sequence[Target]
    ) -> Iterator[Decision]:
        qualified = self._qualified(attribute)
        receiver = attribute.value
        for target in targets:
            if target.kind == "attribute":
                if f"{target.module}.{old}" in qualified:
                    yield Decision(target.shown, target.new)
            elif target.kind == "member":
                owner = f"{target.module}.{target.owner}"
                if owner in self._qualified(receiver) or self._is_own_instance(receiver, target):
                    yield Decision(target.shown, target.new)
                elif not (isinstance(receiver, libcst.Name) and receiver.value in ("self", "cls")):
                    code = self.file.cst_module.code_for_node(receiver)
                    yield Decision(
                        target.shown,
                        target.new,
                        f"`{old}` may be `{target.owner}.{old}`, but the class of `{code}` "
                        "is not known here",
                    )

    def _keyword(
        self, argument: libcst.Arg, old: str, targets: Sequence[Target]
    ) -> Iterator[Decision]:
        call = self.parents.get(argument)
        if not isinstance(call, libcst.Call):
            return
        passed = {arg.keyword.value for arg in call.args if arg.keyword is not None}
        called = self._qualified(call.func)
        for target in targets:
            if target.kind == "keyword" and f"{target.module}.{target.owner}" in called:
                reason = f"the call already passes `{target.new}`" if target.new in passed else ""
                yield Decision(target.shown, target.new, reason)

    def _name(
        self,
        node: libcst.Name,
        parent: libcst.CSTNode | None,
        old: str,
        targets: Sequence[Target],
    ) -> Iterator[Decision]:
        scope = self.scopes.scope_of(node)
        if scope is None:
            return
        access = next((a for a in scope.accesses[old] if a.node is node), None)
        if access is not None:
            referents = access.referents
            if referents and all(isinstance(r, BuiltinAssignment) for r in referents):
                return  # the builtin of that name: not what was renamed
            bound = next((r.scope for r in referents if not isinstance(r, BuiltinAssignment)), None)
            if bound is None:  # unresolved (e.g. a star import): not the target's
                return
        else:
            bound = scope
        for target in targets:
            if self._binds_target(node, parent, bound, target, access):
                reason = self._scope_clash(node, parent, bound, old, target.new, access)
                yield Decision(target.shown, target.new, reason)

    # -- which binding is the target ----------------------------------------------------------

    def _binds_target(
        self,
        node: libcst.Name,
        parent: libcst.CSTNode | None,
        bound: Scope,
        target: Target,
        access: Access | None,
    ) -> bool:
        if target.kind == "attribute":
            if access is not None and f"{target.module}.{target.old}" in self._qualified(node):
                return True
            return isinstance(bound, GlobalScope) and self.module == target.module
        if target.kind == "member":
            return (
                isinstance(bound, ClassScope)
                and isinstance(bound.node, libcst.ClassDef)
                and self._dotted_definition(bound.node) == target.owner
                and self.module == target.module
            )
        if target.kind == "keyword" and isinstance(bound, FunctionScope):
            function = bound.node
            return (
                isinstance(function, libcst.FunctionDef)
                and self.module == target.module
                and self._dotted_definition(function) == target.owner
                and any(param.name.value == target.old for param in _params(function))
            )
        return False

    def _is_own_instance(self, receiver: libcst.BaseExpression, target: Target) -> bool:
        """``self.x``/``cls.x`` inside the target's class, or ``Class.x`` in its module."""
        if not isinstance(receiver, libcst.Name) or self.module != target.module:
            return False
        if receiver.value in ("self", "cls"):
            owner = self.scopes.ancestor(receiver, libcst.ClassDef)
            return owner is not None and self._dotted_definition(owner) == target.owner
        return receiver.value == target.owner and f"{target.module}.{target.owner}" in (
            self._qualified(receiver)
        )

    # -- collisions -----------------------------------------------------------------------------

    def _binding_clash(self, node: libcst.Name, old: str, new: str) -> str:
        scope = self.scopes.scope_of(node)
        if scope is None:
            return ""
        return self._scope_clash(node, self.parents.get(node), scope, old, new, None)

    def _scope_clash(
        self,
        node: libcst.Name,
        parent: libcst.CSTNode | None,
        bound: Scope,
        old: str,
        new: str,
        access: Access | None,
    ) -> str:
        """Why renaming ``old`` to ``new`` in scope ``bound`` would change what a name means."""
        if isinstance(parent, libcst.Param):
            function = self.scopes.ancestor(parent, libcst.FunctionDef)
            if function is not None and any(p.name.value == new for p in _params(function)):
                return f"`{new}` is already a parameter of `{function.name.value}`"
        existing = [a for a in bound.assignments[new] if a.scope is bound]
        if existing:
            olds = [a for a in bound.assignments[old] if isinstance(a, Assignment)]
            if access is not None and olds and all(self._aliases(a.node, new) for a in olds):
                return ""  # `old = new`: the old name already means the new one
            return f"`{new}` is already {self._describe(existing[0], bound)}"
        for scope in self._scopes_within(bound):
            for used in scope.accesses[new]:
                referents = used.referents
                if all(r.scope is not bound for r in referents):
                    if referents and all(isinstance(r, BuiltinAssignment) for r in referents):
                        return f"the builtin `{new}` is used here"
                    if any(
                        isinstance(r, Assignment)
                        and isinstance(r.node, (libcst.Import, libcst.ImportFrom))
                        for r in referents
                    ):
                        return f"`{new}` already names an import here"
                    return f"`{new}` already names an outer definition here"
        return ""

    def _describe(self, assignment: BaseAssignment, scope: Scope) -> str:
        node = assignment.node if isinstance(assignment, Assignment) else None
        if isinstance(node, libcst.Param):
            function = scope.node if isinstance(scope, FunctionScope) else None
            name = function.name.value if isinstance(function, libcst.FunctionDef) else "lambda"
            return f"a parameter of `{name}`"
        if isinstance(node, (libcst.Import, libcst.ImportFrom)):
            return "an import in this scope"
        if isinstance(scope, FunctionScope) and isinstance(scope.node, libcst.FunctionDef):
            return f"a local of `{scope.node.name.value}`"
        if isinstance(scope, ClassScope) and isinstance(scope.node, libcst.ClassDef):
            return f"a member of class `{scope.node.name.value}`"
        return "defined in this module"

    def _aliases(self, node: libcst.CSTNode, new: str) -> bool:
        """Whether ``node`` is the name assigned in ``old = new``."""
        statement = (
            self.scopes.ancestor(node, libcst.Assign) if isinstance(node, libcst.Name) else None
        )
        return (
            statement is not None
            and isinstance(statement.value, libcst.Name)
            and statement.value.value == new
        )

    def _scopes_within(self, bound: Scope) -> list[Scope]:
        found = []
        for scope in {id(s): s for s in self.scopes.scopes.values() if s is not None}.values():
            current: Scope | None = scope
            while current is not None:
                if current is bound:
                    found.append(scope)
                    break
                parent = current.parent
                current = None if parent is current else parent
        return found

    # -- helpers ------------------------------------------------------------------------------

    def _qualified(self, node: libcst.CSTNode) -> set[str]:
        scope = self.scopes.scope_of(node)
        if scope is None:
            return set()
        names = set()
        for qualified in scope.get_qualified_names_for(node):
            name = qualified.name
            if qualified.source is QualifiedNameSource.LOCAL and self.module:
                name = f"{self.module}.{name}"
            elif name.startswith("."):
                level = len(name) - len(name.lstrip("."))
                name = absolute_module(name[level:], level, self.module, self.file.path)
            names.add(name)
        return names

    def _absolute_module(self, statement: libcst.ImportFrom) -> str:
        dotted = ""
        if statement.module is not None:
            dotted = self.file.cst_module.code_for_node(statement.module).replace(" ", "")
        level = len(statement.relative)
        if level == 0:
            return dotted
        return absolute_module(dotted, level, self.module, self.file.path)

    def _dotted_definition(self, node: libcst.ClassDef | libcst.FunctionDef) -> str:
        """``Outer.method``: the definition's path inside its module."""
        parts = [node.name.value]
        current = self.parents.get(node)
        while current is not None:
            if isinstance(current, (libcst.ClassDef, libcst.FunctionDef)):
                parts.append(current.name.value)
            current = self.parents.get(current)
        return ".".join(reversed(parts))


def _params(function: libcst.FunctionDef) -> list[libcst.Param]:

    params = function.params
    found = [*params.posonly_params, *params.params, *params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, libcst.Param):
            found.append(star)
    return found
