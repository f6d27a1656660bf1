"""The driver's layers (scripts/gpubench_driver): every module imports at module level, never inside a
function (an import there hides a circle); no module imports, directly or through others, itself; lib/
imports only lib/, a study plug-in (studies/<name>.py) only lib/, the stages no command, and the stages,
lib/ and the commands name no study; each command is a module of its own; no module is over 500 lines.
Read from the source with ast, so a module that is never imported is checked too."""
import ast
import importlib
import os
import re
import unittest

from support import SCRIPTS_DIR

PACKAGE = "gpubench_driver"
DRIVER = os.path.join(SCRIPTS_DIR, PACKAGE)
MOST_LINES = 500


def modules():
    """{dotted name: path} of every module of the driver."""
    found = {}
    for folder, _, files in os.walk(DRIVER):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                parts = os.path.relpath(path, SCRIPTS_DIR)[:-3].split(os.sep)
                found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(tree, known):
    """[(driver module imported, the import node)] of a parsed module: `from a.b import c` imports
    a.b.c where that is a module, else a.b."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node) for alias in node.names if alias.name.startswith(PACKAGE)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.append((name if name in known else node.module, node))
    return found


def graph():
    """{module: {modules it imports}}, and the imports made inside a function or class."""
    known = modules()
    edges, nested = {}, []
    for name, path in known.items():
        with open(path, encoding="utf-8") as stream:
            tree = ast.parse(stream.read(), path)
        top = {id(node) for node in tree.body}
        edges[name] = set()
        for target, node in imported(tree, known):
            edges[name].add(target)
            if id(node) not in top:
                nested.append(f"{name}:{node.lineno} imports {target}")
    return edges, nested


def cycles(edges):
    """The strongly connected components of more than one module, or of one that imports itself (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1 or node in edges.get(node, ()):
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def layer(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] == "studies") else "top"


class LayersTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.edges, cls.nested = graph()

    def test_the_driver_is_found(self):
        self.assertGreater(len(self.edges), 40)
        for package in ("lib", "stages", "studies", "commands"):
            self.assertIn(f"{PACKAGE}.{package}", self.edges)

    def test_every_module_imports(self):
        for name in modules():
            if not name.endswith("__main__"):  # the entry point runs the command line
                with self.subTest(module=name):
                    importlib.import_module(name)

    def test_no_import_inside_a_function(self):
        self.assertEqual(self.nested, [])

    def test_no_circle(self):
        self.assertEqual(cycles(self.edges), [])

    def test_each_layer_imports_only_those_beneath_it(self):
        allowed = {"lib": {"lib"}, "plugin": {"lib"}, "studies": {"lib", "plugin"},
                   "stages": {"lib", "studies", "stages"}, "commands": {"lib", "studies", "stages", "commands"},
                   "top": {"commands", "top"}}
        wrong = []
        for module, targets in self.edges.items():
            kind = "plugin" if module.startswith(f"{PACKAGE}.studies.") else layer(module)
            for target in targets:
                target_kind = "plugin" if target.startswith(f"{PACKAGE}.studies.") else layer(target)
                if target != f"{PACKAGE}.lib" and target_kind not in allowed[kind]:
                    wrong.append(f"{module} imports {target}")
        self.assertEqual(wrong, [])

    def test_no_module_over_the_limit(self):
        long = {}
        for name, path in modules().items():
            with open(path, encoding="utf-8") as stream:
                count = sum(1 for _ in stream)
            if count > MOST_LINES:
                long[name] = count
        self.assertEqual(long, {})

    def test_one_module_per_command(self):
        """Each command is a module of commands/ (its parser, what it does, the errors it reports), listed
        once in cli.COMMANDS; cli.py itself holds no command's parser."""
        cli = importlib.import_module(f"{PACKAGE}.commands.cli")
        registering = sorted(name for name in modules() if name.startswith(f"{PACKAGE}.commands.")
                             and hasattr(importlib.import_module(name), "register"))
        self.assertEqual(sorted(command.__name__ for command in cli.COMMANDS), registering)
        for command in cli.COMMANDS:
            with self.subTest(command=command.__name__):
                self.assertTrue(callable(command.execute))
                self.assertTrue(all(issubclass(error, Exception) for error in command.ERRORS))
        with open(modules()[f"{PACKAGE}.commands.cli"], encoding="utf-8") as stream:
            self.assertNotIn("add_argument(", stream.read())

    def test_only_the_plugins_name_a_study(self):
        """A study's name as a string literal (a key, a comparison) outside its plug-in: the stage or
        helper that holds it knows the study, which a new study would then have to edit too."""
        studies = [os.path.basename(path)[:-3] for path in modules().values()
                   if os.path.dirname(path) == os.path.join(DRIVER, "studies") and not path.endswith("__init__.py")]
        # Names that are also a field or an axis of every study ("precision": the number format slot).
        shared_words = {"precision", "roofline"}
        named = []
        for name, path in modules().items():
            if name.startswith(f"{PACKAGE}.studies"):
                continue
            with open(path, encoding="utf-8") as stream:
                tree = ast.parse(stream.read(), path)
            # A dict's key names a field (results.DESCRIBED's "primitives" is a --describe field), not a study.
            keys = {id(key) for node in ast.walk(tree) if isinstance(node, ast.Dict) for key in node.keys}
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in keys:
                    for study in studies:
                        if study not in shared_words and re.fullmatch(rf"{study}(/.*)?", node.value):
                            named.append(f"{name}:{node.lineno} names {study}")
        self.assertEqual(named, [])


    def test_no_generic_module_reads_a_key_by_its_parts(self):
        """A key or a name read by its '/'-separated parts (key.endswith("/pageable"), a figure key's prefix, a
        split on '/') in lib/, the stages or the commands: a study's fact kept outside its plug-in record, or a
        value taken from a name instead of the binary's --describe (lib/migrate.py reads old names by a pattern)."""
        found = []
        for name, path in modules().items():
            if name.startswith(f"{PACKAGE}.studies"):
                continue
            with open(path, encoding="utf-8") as stream:
                tree = ast.parse(stream.read(), path)
            constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                         and isinstance(node.value, ast.Constant) for target in node.targets
                         if isinstance(target, ast.Name)}

            def text(value):
                if isinstance(value, ast.Name):
                    return constants.get(value.id)
                return value.value if isinstance(value, ast.Constant) else None

            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                        "startswith", "endswith", "split", "rsplit", "partition", "rpartition"):
                    texts = [text(value) for argument in node.args for value in ast.walk(argument)]
                    if any(isinstance(value, str) and "/" in value for value in texts):
                        found.append(f"{name}:{node.lineno} {node.func.attr}({ast.unparse(node.args[0])})")
        self.assertEqual(found, [])

if __name__ == "__main__":
    unittest.main()
