"""What the rules are written with: the Rule base class, and small makers
and tests of the ast nodes they rewrite."""

import ast


HELPER_PREFIX = "_keras_clone_fix_"


def nodes_in(tree):
    """Every node in `tree`, as ast.walk finds them, in one list (a third of
    ast.walk's time: no generators)."""
    nodes = [tree]
    for node in nodes:  # grows as it goes
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, ast.AST):
                nodes.append(value)
            elif isinstance(value, list):
                nodes.extend(item for item in value if isinstance(item, ast.AST))
    return nodes


def located(new, at):
    """`new`, made here around nodes of the source, with the location of
    `at` wherever it has none: what compile needs, without
    fix_missing_locations's walk of the whole function."""
    for node in nodes_in(new):
        if "lineno" in node._attributes and not hasattr(node, "lineno"):
            ast.copy_location(node, at)
    return new


def unlocated_copy(node):
    """A copy of an expression, without its locations (given where it is put)."""
    if isinstance(node, list):
        return [unlocated_copy(item) for item in node]
    if not isinstance(node, ast.AST):
        return node
    return type(node)(**dict((field, unlocated_copy(getattr(node, field, None)))
                             for field in node._fields))


def helper_name(function):
    return ast.Name(id=HELPER_PREFIX + function.__name__, ctx=ast.Load())


def call_node(function, *args):
    return ast.Call(func=function, args=list(args), keywords=[])


def name_of(node):
    return node.id if isinstance(node, ast.Name) else None


def is_attribute(node, owner, attribute):
    return (isinstance(node, ast.Attribute) and node.attr == attribute
            and name_of(node.value) == owner)


# The fields of a statement (or except clause) that hold statements.
STATEMENT_LISTS = ("body", "orelse", "handlers", "finalbody")


class Rule(ast.NodeTransformer):
    """One rewrite; `found` counts the places it rewrote.

    Its walk visits statements only, as rules rewrite statements: a tenth of
    the nodes. A rule that looks inside expressions walks them itself.
    """

    helpers = ()  # functions of this module the rewritten code calls

    def __init__(self):
        self.found = 0

    def rewritten(self, node):
        self.found += 1
        return node

    def generic_visit(self, node):
        for field in STATEMENT_LISTS:
            statements = getattr(node, field, None)
            if isinstance(statements, list):
                kept = []
                for statement in statements:
                    visited = self.visit(statement)
                    if isinstance(visited, list):
                        kept.extend(visited)
                    elif visited is not None:
                        kept.append(visited)
                setattr(node, field, kept)
        return node
