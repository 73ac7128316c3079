"""Outside text (run labels, notes, device and target names from imported records, data set and file names, error
texts, machine names, a link's parameters) is never drawn as markdown: checked on the sources of app.py, pages/*.py
and ui/*.py (parsed with ``ast``, none of them imported). The one way to put such text into markdown is
``ui.safe_text``: ``escape`` for running text, ``code`` for a code span.

Which calls: a call of a Streamlit method that renders markdown, on ``st`` or on any object (a column, a container,
a placeholder: matched by the method's name, also as ``(st.success if ok else st.warning)(...)``):

- ``markdown``, ``write``, ``success``, ``info``, ``warning``, ``error``, ``caption``, ``toast``, ``header``,
  ``subheader``, ``title``, ``spinner``, ``status``: the first positional argument or ``body=``/``text=`` (every
  positional argument of ``write``); ``progress``: its ``text``;
- ``metric``: label, value and delta;
- the widgets whose label is markdown (``button``, ``download_button``, ``expander``, ``popover``, ``tabs`` (each
  label), ``checkbox``, ``toggle``, ``radio``, ``selectbox``, ``multiselect``, ``number_input``, ...): the first
  positional argument or ``label=``; for ``radio`` (and ``pills``, ``segmented_control``) also the options, as
  ``format_func`` shows them;
- ``table``: every cell and column title (a list or comprehension of dicts, ``pd.DataFrame(...)`` of one, a name
  bound to one, a frame method such as ``.drop(...)`` on one, or a call of a function of the same module that
  returns one);
- and the ``help=`` text of any of them.

``st.text``, ``st.code`` and ``st.dataframe`` show text literally and are not checked; neither are calls on a logger
(``log.info``), nor ``write`` on anything but Streamlit (a file's ``write``).

The rule: the text, and every value interpolated into it (an f-string's fields, ``%`` and ``.format`` arguments,
the non-literal sides of ``+``, the items of ``"".join(...)``, both branches of ``a if c else b``, either side of
``a or b``), is

- a call of ``ui.safe_text.escape`` or ``ui.safe_text.code`` (however imported: ``escape(...)``,
  ``safe_text.code(...)``);
- a field with a numeric format spec (``{x:.2f}``, ``{n:,}``, ``{p:.0%}``, ``{i:d}``; ``%d``, ``%.1f``): a text
  there raises instead of showing;
- a literal, a number-valued builtin (``len``, ``int``, ``round``, ...), or a parameter annotated ``int``/``float``;
- an item of a dict, list or tuple literal whose every value passes (``ICONS[kind]``, ``ICONS.get(kind, "")``);
- a module-level constant of a project module (``live_messages.NVML_NOTE``, ``diagnosis.KNOBS["host-bound"]``) whose value
  passes, checked in that module;
- a value of :data:`OWNED` (a function's result, a constant's attributes and items), each entry with the reason it
  gives only the project's own words or numbers: trusted, not checked;
- a call of a function in :data:`BUILDERS`: functions of this project that build markdown, whose ``return`` values
  are checked by this same rule (and :data:`APPENDERS`, whose appended lines are), so those entries claim nothing
  the test does not check;
- a name bound in the same function (or an enclosing one, or the module) by simple assignments (``msg = ...``,
  ``msg += ...``, ``:=``) whose every value passes;
- ``str(x)``, ``x.lower()``, ``x.strip()``, ... of a value that passes;
- an expression named in :data:`TRUSTED` for its file, with the reason.

Anything else (an attribute such as ``run.label``, a subscript, a loop or ``with`` variable, a parameter, a widget's
value, a call of another function) is outside text until shown otherwise, and is reported as
``file:line: call st.X interpolates EXPR unescaped`` (EXPR: the part found unsafe, also when it came through a
helper variable).

Limits (what the check does not see): it follows names only through simple assignments in the same function, the
functions around it and the module, never through attributes, containers built by code, loops, ``with ... as`` or
parameters (each of those counts as outside text: the check errs towards a report); it does not follow the order
of statements (a name is judged by all its assignments); a table's cells are seen only in the forms above, not what
``frame[...] = ...`` or ``frame.insert`` adds later; a markdown call reached under another name (``show =
st.markdown; show(x)``), through ``getattr``, or in a column's ``help`` (``st.column_config``), is not seen; lines
handed to the live view's element (ui.live_feed's ``lines``, ``parts``) are not markdown for Streamlit and not
checked (ui/static/live.js draws them as text); :data:`OWNED` and :data:`TRUSTED` entries are believed, not
checked. The engine's (bench/) sentences that embed outside text (a comparison's headline, a diagnosis verdict, a
sweep's exchange note) are plain text, escaped whole where a page draws them.
"""
from __future__ import annotations

import ast
import string
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SAFE_TEXT = "ui.safe_text"
SAFE_FUNCTIONS = {f"{SAFE_TEXT}.escape", f"{SAFE_TEXT}.code"}

TEXT_METHODS = {"markdown", "write", "success", "info", "warning", "error", "caption", "toast", "header",
                "subheader", "title", "spinner", "status"}
LABEL_METHODS = {"button", "download_button", "link_button", "form_submit_button", "expander", "popover", "tabs",
                 "checkbox", "toggle", "radio", "selectbox", "multiselect", "slider", "select_slider", "text_input",
                 "number_input", "text_area", "file_uploader", "date_input", "time_input", "color_picker",
                 "page_link", "metric", "pills", "segmented_control", "feedback"}
METRIC_FIELDS = ("label", "value", "delta")
OPTION_METHODS = {"radio", "pills", "segmented_control"}  # their options are drawn as markdown
LOGGERS = {"log", "logger", "logging", "_log", "LOG", "LOGGER", "_logger"}
NUMBER_BUILTINS = {"len", "int", "float", "round", "abs", "sum", "bool"}
NUMBER_ANNOTATIONS = {"int", "float", "bool"}
NUMERIC_SPEC_TYPES = set("bcdeEfFgGnoxX%")
NUMERIC_PERCENT_TYPES = set("diouxXeEfFgG")
CASE_METHODS = {"lower", "upper", "capitalize", "title", "casefold", "strip", "rstrip", "lstrip"}  # add no markup
PROJECT = ("bench", "ui", "pages", "app")
FRAME_METHODS = {"drop", "rename", "reindex", "head", "sort_values", "reset_index"}  # keep a table's cells as they are

# Functions (and module-level values) that give only the project's own words or numbers: qualified name -> why. A
# value's attributes and items, and the results of its methods on safe arguments, count as it does.
OWNED: dict[str, str] = {
    "bench.analysis.metrics.format_seconds": "formats a float as seconds ('1.23 s', '850 ms'), or '—'",
    "bench.output.ranking.cell": "formats a float with the numeric format given, plus the superscript marks "
                                 "(¹ ²) TableNotes numbered; '—' for none",
    "ui.lesson._fmt": "formats a float with the numeric format given (every caller passes one), or '—'",
    "ui.lesson.STEP_BY_KEY": "the lesson's steps, titles and texts written in ui/lesson.py (their markdown intended)",
}

# Functions of this project that build markdown: their return values are checked by the same rule, so the entry
# claims nothing the test does not check. Qualified name -> what it is.
BUILDERS: dict[str, str] = {
    "ui.lesson.gpu_target": "the GPU target of a lesson step: 'gpu:0' or None",
    "ui.lesson.speedup_text": "'<other> is Nx faster than <baseline>'",
    "ui.live.status_line": "a run's status line, its parts escaped",
    "ui.live._markdown_part": "one part of the status line, escaped, bold or not",
    "bench.analysis.compare.caution": "the headline's caveat: the project's own sentences",
}

# Functions of this project that fill a list with markdown lines: what they append (or insert) is checked by the same
# rule. Qualified name -> what the lines are.
APPENDERS: dict[str, str] = {
    "ui.url_state.parse": "a link's notes: what was left out and why, the link's words in code spans",
}

# One expression in one file, trusted where the rule cannot see that it is safe: (file, expression) -> why.
TRUSTED: dict[tuple[str, str], str] = {
    ("pages/system.py", "check.fix"): "a doctor item's fix: bench/hardware/doctor.py's own words and commands (in "
                                      "code spans, as intended); the item's detail, which quotes the machine, is "
                                      "escaped",
    ("ui/url_state.py", "n"): "a note of UrlState.notes, each built by parse() (a builder: its appends are checked) "
                              "and kept in the session state between reruns",
}


@dataclass
class Scope:
    """Where a name is looked up: the simple assignments of a function (or the module), the names it binds in other
    ways (parameters, loop and ``with`` targets, imports: not followed), its number-annotated parameters."""

    assigned: dict[str, list[ast.expr]] = field(default_factory=dict)
    opaque: set[str] = field(default_factory=set)
    numbers: set[str] = field(default_factory=set)
    parent: Scope | None = None

    def lookup(self, name: str) -> tuple[list[ast.expr] | None, bool]:
        """(the values bound to ``name``: None when it is bound in a way not followed or not at all, whether it is a
        number-annotated parameter), from the nearest scope that binds it."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.numbers and name not in scope.assigned:
                return None, True
            if name in scope.opaque:
                return None, False
            if name in scope.assigned:
                return scope.assigned[name], False
            scope = scope.parent
        return None, False


def _own_statements(body: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """The nodes of ``body`` in source order, not descending into nested functions, classes and lambdas (their own
    scopes: yielded, not entered)."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _names(target: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _scope_of(body: Sequence[ast.stmt], parent: Scope | None, args: ast.arguments | None = None) -> Scope:
    scope = Scope(parent=parent)
    for node in _own_statements(body):
        if isinstance(node, ast.Assign):
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                scope.assigned.setdefault(node.targets[0].id, []).append(node.value)
            else:
                scope.opaque.update(n for t in node.targets for n in _names(t))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            if node.value is not None:
                scope.assigned.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.NamedExpr):
            scope.assigned.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            scope.opaque.update(_names(node.target))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            scope.opaque.update(_names(node.optional_vars))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            scope.opaque.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            scope.opaque.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope.opaque.add(node.name)
    if args is not None:
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is None:
                continue
            if arg.annotation is not None and ast.unparse(arg.annotation) in NUMBER_ANNOTATIONS:
                scope.numbers.add(arg.arg)
            else:
                scope.opaque.add(arg.arg)  # a parameter: its caller's value, re-bound or not
    return scope


def _comprehension_scope(node: ast.GeneratorExp | ast.ListComp | ast.SetComp, parent: Scope) -> Scope:
    return Scope(opaque={n for gen in node.generators for n in _names(gen.target)}, parent=parent)


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class Checker:
    """The rule above over one module's source; :attr:`problems` holds its ``file:line: ...`` lines."""

    def __init__(self, source: str, filename: str, module: str, builders: dict[str, str] | None = None,
                 owned: dict[str, str] | None = None, trusted: dict[tuple[str, str], str] | None = None,
                 appenders: dict[str, str] | None = None):
        self.tree = ast.parse(source, filename)
        self.filename, self.module = filename, module
        self.builders = BUILDERS if builders is None else builders
        self.owned = OWNED if owned is None else owned
        self.trusted = TRUSTED if trusted is None else trusted
        self.appenders = APPENDERS if appenders is None else appenders
        self.aliases: dict[str, str] = {}  # a name in this module -> what it names ("st" -> "streamlit")
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.problems: list[str] = []
        self.calls = 0  # markdown calls examined
        self._imports()
        self.scope = _scope_of(self.tree.body, None)
        self._others: dict[str, Checker | None] = {}

    def other(self, module: str) -> Checker | None:
        """The checker of another module of the project (for its constants), None when it is no project file."""
        if module == self.module:
            return self
        if module not in self._others:
            path = ROOT / (module.replace(".", "/") + ".py")
            self._others[module] = (Checker(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)), module,
                                            self.builders, self.owned, self.trusted, self.appenders)
                                    if module.split(".")[0] in PROJECT and path.is_file() else None)
        return self._others[module]

    def constant(self, qualified: str) -> tuple[Checker, list[ast.expr]] | None:
        """The values a module-level name of a project module is bound to ("ui.live_messages.NVML_NOTE"), with that module's
        checker; None when ``qualified`` names none."""
        module, _, name = qualified.rpartition(".")
        checker = self.other(module) if module else None
        if checker is None:
            return None
        values, _ = checker.scope.lookup(name)
        return (checker, values) if values is not None else None

    # -- names ---------------------------------------------------------------------------------------------------
    def _imports(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node

    def qualified(self, node: ast.expr) -> str | None:
        """The dotted name ``node`` refers to ("escape" -> "ui.safe_text.escape"), None when it is no dotted name."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.aliases.get(node.id)
        if head is None:
            head = f"{self.module}.{node.id}" if node.id in self.functions else node.id
        return ".".join([head, *reversed(parts)])

    # -- the walk ------------------------------------------------------------------------------------------------
    def run(self) -> Checker:
        self._visit(self.tree.body, self.scope, None)
        return self

    def _visit(self, body: Sequence[ast.stmt], scope: Scope, function: str | None) -> None:
        for node in _own_statements(body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = _scope_of(node.body, scope, node.args)
                name = f"{self.module}.{node.name}" if function is None else f"{function}.<locals>.{node.name}"
                self._visit(node.body, inner, name)
                for part in _own_statements(node.body) if name in self.builders or name in self.appenders else ():
                    if isinstance(part, ast.Return) and part.value is not None and name in self.builders:
                        self._check(part.value, inner, part.lineno, f"return of {name}")
                    elif (isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute) and name in self.appenders
                          and part.func.attr in ("append", "insert") and part.args):
                        self._check(part.args[-1], inner, part.lineno, f"{ast.unparse(part.func)} in {name}")
            elif isinstance(node, ast.ClassDef):
                self._visit(node.body, Scope(parent=scope), function)
            elif isinstance(node, ast.Lambda):
                inner = Scope(opaque={a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)},
                              parent=scope)
                self._visit([ast.Expr(node.body)], inner, function)
            elif isinstance(node, ast.Call):
                self._call(node, scope)

    def _call(self, call: ast.Call, scope: Scope) -> None:
        func = call.func
        if isinstance(func, ast.IfExp):  # (st.success if ok else st.warning)(text): both text methods
            if not (isinstance(func.body, ast.Attribute) and isinstance(func.orelse, ast.Attribute)
                    and {func.body.attr, func.orelse.attr} <= TEXT_METHODS - {"write"}):
                return
            func = func.body
        if not isinstance(func, ast.Attribute):
            return
        method, receiver = func.attr, func.value
        receiver_name = self.qualified(receiver) or ""
        if receiver_name.split(".")[-1] in LOGGERS or receiver_name.startswith("logging"):
            return
        texts: list[ast.expr] = []
        tables: list[ast.expr] = []
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        positional = [a for a in call.args if not isinstance(a, ast.Starred)]
        if method in TEXT_METHODS:
            if method == "write":
                if not receiver_name.startswith("streamlit"):
                    return  # a file's or a stream's write
                texts.extend(positional)
            elif positional:
                texts.append(positional[0])
            texts.extend(keywords[k] for k in ("body", "text") if k in keywords)
        elif method == "progress":  # st.progress(value, text)
            texts.extend(positional[1:2])
            texts.extend(keywords[k] for k in ("text",) if k in keywords)
        elif method == "table":  # every cell, and every column title, is markdown
            tables.extend(positional[:1])
            tables.extend(keywords[k] for k in ("data",) if k in keywords)
        elif method == "metric":
            texts.extend(positional[:3])
            texts.extend(keywords[k] for k in METRIC_FIELDS if k in keywords)
        elif method in LABEL_METHODS:
            if method != "page_link" and positional:  # page_link's first argument is the page; its label is label=
                first = positional[0]
                texts.extend(first.elts if method == "tabs" and isinstance(first, (ast.List, ast.Tuple)) else [first])
            texts.extend(keywords[k] for k in ("label",) if k in keywords)
            if method in OPTION_METHODS:  # its options are markdown too: as format_func shows them, or as they are
                shown = keywords.get("format_func")
                if isinstance(shown, ast.Lambda):
                    texts.append(shown.body)
                    scope = Scope(opaque={a.arg for a in shown.args.args}, parent=scope)
                elif shown is not None:
                    texts.append(ast.Call(func=shown, args=[ast.Name("option")], keywords=[]))
                else:
                    options = keywords.get("options", positional[1] if len(positional) > 1 else None)
                    if options is not None:
                        texts.append(ast.Call(func=ast.Attribute(ast.Constant(""), "join"), args=[options],
                                              keywords=[]))
        else:
            return
        texts.extend(keywords[k] for k in ("help",) if k in keywords)
        if not texts and not tables:
            return
        self.calls += 1
        where = f"call {ast.unparse(func)}"
        for text in texts:
            self._check(text, scope, call.lineno, where)
        for table in tables:
            self._report(self._table_unsafe(table, scope, frozenset(), 0), call.lineno, where)

    def _table_unsafe(self, data: ast.expr, scope: Scope, following: frozenset[str], depth: int) -> list[ast.expr]:
        """The cells of a table's data that may hold outside text: ``pd.DataFrame(rows)``, a list (or comprehension)
        of dicts whose keys and values pass the rule, a name bound to one, or a call of a function of this module
        whose returns are such data."""
        if isinstance(data, ast.Call):
            name = self.qualified(data.func) or ""
            if name in ("pandas.DataFrame", "pd.DataFrame") and data.args:
                return self._table_unsafe(data.args[0], scope, following, depth)
            if isinstance(data.func, ast.Attribute) and data.func.attr in FRAME_METHODS:
                return self._table_unsafe(data.func.value, scope, following, depth)
            if name.startswith(self.module + ".") and name.rsplit(".", 1)[1] in self.functions and depth < 3:
                function = self.functions[name.rsplit(".", 1)[1]]
                inner = _scope_of(function.body, self.scope, function.args)
                return [bad for ret in _own_statements(function.body)
                        if isinstance(ret, ast.Return) and ret.value is not None
                        for bad in self._table_unsafe(ret.value, inner, following, depth + 1)]
            return [data]
        if isinstance(data, (ast.ListComp, ast.GeneratorExp)):
            return self._table_unsafe(data.elt, _comprehension_scope(data, scope), following, depth)
        if isinstance(data, (ast.List, ast.Tuple)):
            return [bad for e in data.elts for bad in self._table_unsafe(e, scope, following, depth)]
        if isinstance(data, ast.Dict):
            return [bad for part in (*data.keys, *data.values) if part is not None
                    for bad in self._unsafe(part, scope, following)]
        if isinstance(data, ast.Name) and data.id not in following:
            values, _ = scope.lookup(data.id)
            if values is not None:
                return [bad for v in values for bad in self._table_unsafe(v, scope, following | {data.id}, depth)]
        return [data]

    # -- the rule ------------------------------------------------------------------------------------------------
    def _check(self, text: ast.expr, scope: Scope, line: int, where: str) -> None:
        self._report(self._unsafe(text, scope, frozenset()), line, where)

    def _report(self, bad: list[ast.expr], line: int, where: str) -> None:
        for expr in bad:
            if (self.filename, ast.unparse(expr)) not in self.trusted:
                self.problems.append(f"{self.filename}:{line}: {where} interpolates {ast.unparse(expr)} unescaped")

    def _unsafe(self, node: ast.expr, scope: Scope, following: frozenset[str]) -> list[ast.expr]:
        """The parts of ``node`` that may hold outside text (empty: ``node`` is safe to draw as markdown)."""
        if isinstance(node, ast.Constant):
            return []
        if isinstance(node, ast.JoinedStr):
            out: list[ast.expr] = []
            for value in node.values:
                if isinstance(value, ast.FormattedValue) and not _numeric_spec(value.format_spec):
                    out.extend(self._unsafe(value.value, scope, following))
            return out
        if isinstance(node, ast.IfExp):
            return self._unsafe(node.body, scope, following) + self._unsafe(node.orelse, scope, following)
        if isinstance(node, ast.BoolOp):  # "a or b": either one is shown
            return [bad for v in node.values for bad in self._unsafe(v, scope, following)]
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add):
                return self._unsafe(node.left, scope, following) + self._unsafe(node.right, scope, following)
            left = node.left
            if isinstance(node.op, ast.Mod) and isinstance(left, ast.Constant) and isinstance(left.value, str):
                return self._percent(left.value, node.right, scope, following)
            if isinstance(node.op, ast.Mult):  # "-" * n
                return [bad for side in (node.left, node.right) if not _is_number_literal(side)
                        for bad in self._unsafe(side, scope, following)]
            return [node]
        if self._owned(node, scope, following):
            return []
        if isinstance(node, ast.Name):
            if node.id in following:
                return []  # msg = msg + ...: its other values are checked where they are bound
            values, number = scope.lookup(node.id)
            if number:
                return []
            if values is not None:
                return [b for v in values for b in self._unsafe(v, scope, following | {node.id})]
            return [] if self._safe_constant(node, following) else [node]
        if isinstance(node, ast.Attribute):
            return [] if self._safe_constant(node, following) else [node]
        if isinstance(node, ast.Subscript):
            items = self._literal_container(node.value, scope, following)
            if items is not None:
                return [b for v in items for b in self._unsafe(v, *self._container_scope(node.value, scope), following)]
            return [node]
        if isinstance(node, ast.Call):
            return self._call_unsafe(node, scope, following)
        return [node]

    def _safe_constant(self, node: ast.Name | ast.Attribute, following: frozenset[str]) -> bool:
        """Whether ``node`` names a module-level constant of a project module (``live_messages.NVML_NOTE``) whose every value
        passes the rule, checked in that module."""
        name = self.qualified(node)
        if name is None or name in following:
            return False
        found = self.constant(name)
        if found is None:
            return False
        checker, values = found
        return not any(checker._unsafe(v, checker.scope, following | {name}) for v in values)

    def _container_scope(self, node: ast.expr, scope: Scope) -> tuple[Scope]:
        """The scope a container's items are checked in: another module's when ``node`` names its constant."""
        name = self.qualified(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if isinstance(node, ast.Name) and scope.lookup(node.id)[0] is not None:
            return (scope,)
        found = self.constant(name) if name else None
        return (found[0].scope,) if found else (scope,)

    def _literal_container(self, node: ast.expr, scope: Scope, following: frozenset[str]) -> list[ast.expr] | None:
        """The items of a dict, list or tuple literal that ``node`` is or names (``CHECKLIST_ICONS``,
        ``diagnosis.KNOBS``, ``{True: "a", False: "b"}``): indexing it gives one of them. None otherwise."""
        if isinstance(node, ast.Dict):
            return list(node.values)
        if isinstance(node, (ast.List, ast.Tuple)):
            return list(node.elts)
        values: list[ast.expr] | None = None
        if isinstance(node, ast.Name):
            values = scope.lookup(node.id)[0]
        if values is None and isinstance(node, (ast.Name, ast.Attribute)):
            name = self.qualified(node)
            found = self.constant(name) if name else None
            values = found[1] if found else None
        if values is None:
            return None
        items: list[ast.expr] = []
        for value in values:
            if not isinstance(value, (ast.Dict, ast.List, ast.Tuple)):
                return None
            items.extend(value.values if isinstance(value, ast.Dict) else value.elts)  # type: ignore[arg-type]
        return items

    def _owned(self, node: ast.expr, scope: Scope, following: frozenset[str]) -> bool:
        """Whether ``node`` is a value of :data:`OWNED` or a call of one, an attribute or item of such a value, or a
        method's result on it whose arguments all pass the rule (``models.PRESETS[name].title``)."""
        while True:
            name = self.qualified(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
            if name is not None and name in self.owned:
                return True
            if isinstance(node, ast.Name) and node.id not in following:  # a name bound to owned values only
                values, _ = scope.lookup(node.id)
                return bool(values) and all(self._owned(v, scope, following | {node.id}) for v in values or ())
            if isinstance(node, (ast.Attribute, ast.Subscript)):
                node = node.value
            elif isinstance(node, ast.Call):
                if isinstance(node.func, ast.Attribute):  # a method: its arguments go into its result
                    args = [*node.args, *(k.value for k in node.keywords)]
                    if any(self._unsafe(a, scope, following) for a in args):
                        return False
                node = node.func
            else:
                return False

    def _call_unsafe(self, node: ast.Call, scope: Scope, following: frozenset[str]) -> list[ast.expr]:
        func = node.func
        name = self.qualified(func)
        if name in SAFE_FUNCTIONS or name in self.owned or name in self.builders:
            return []
        if isinstance(func, ast.Name) and func.id in NUMBER_BUILTINS and func.id not in self.aliases:
            return []
        if isinstance(func, ast.Name) and func.id == "str" and len(node.args) == 1:
            return self._unsafe(node.args[0], scope, following)
        if isinstance(func, ast.Attribute) and func.attr == "get" and 1 <= len(node.args) <= 2:
            items = self._literal_container(func.value, scope, following)  # ICONS.get(key, ""): one of its values
            if items is not None:
                where = self._container_scope(func.value, scope)[0]
                return ([b for v in items for b in self._unsafe(v, where, following)]
                        + [b for a in node.args[1:] for b in self._unsafe(a, scope, following)])
        if (isinstance(func, ast.Attribute) and func.attr in CASE_METHODS
                and all(isinstance(a, ast.Constant) for a in node.args)):
            return [node] if self._unsafe(func.value, scope, following) else []
        if isinstance(func, ast.Attribute) and _is_text_literal(func.value):
            if func.attr == "join" and len(node.args) == 1:
                return self._items_unsafe(node.args[0], scope, following)
            if func.attr == "format":
                return self._format(str(ast.literal_eval(func.value)), node, scope, following)
        return [node]

    def _items_unsafe(self, items: ast.expr, scope: Scope, following: frozenset[str]) -> list[ast.expr]:
        if isinstance(items, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            return self._unsafe(items.elt, _comprehension_scope(items, scope), following)
        if isinstance(items, (ast.List, ast.Tuple, ast.Set)):
            return [bad for e in items.elts for bad in self._unsafe(e, scope, following)]
        if isinstance(items, ast.Name):
            values, _ = scope.lookup(items.id)
            if values is not None and items.id not in following:
                return [b for v in values for b in self._items_unsafe(v, scope, following | {items.id})]
        return [items]

    def _format(self, template: str, call: ast.Call, scope: Scope, following: frozenset[str]) -> list[ast.expr]:
        """``template.format(...)``: each argument is safe, or every field it fills has a numeric spec."""
        specs: dict[int | str, list[str]] = {}
        auto = 0
        for _, field_name, spec, _ in string.Formatter().parse(template):
            if field_name is None:
                continue
            key: int | str
            head = field_name.split(".")[0].split("[")[0]
            if head == "":
                key, auto = auto, auto + 1
            else:
                key = int(head) if head.isdigit() else head
            specs.setdefault(key, []).append(spec or "")
        out: list[ast.expr] = []
        fills: list[tuple[int | str, ast.expr]] = [(i, a) for i, a in enumerate(call.args)]
        fills += [(k.arg, k.value) for k in call.keywords if k.arg]
        for key, value in fills:
            used = specs.get(key, [])
            if used and all(_numeric_text_spec(s) for s in used):
                continue
            out.extend(self._unsafe(value, scope, following))
        return out

    def _percent(self, template: str, args: ast.expr, scope: Scope, following: frozenset[str]) -> list[ast.expr]:
        """``template % args``: each argument is safe, or it fills a numeric conversion (%d, %.1f)."""
        conversions = [c for c in _percent_conversions(template) if c != "%"]
        values = list(args.elts) if isinstance(args, ast.Tuple) else [args]
        out: list[ast.expr] = []
        for i, value in enumerate(values):
            if i < len(conversions) and conversions[i] in NUMERIC_PERCENT_TYPES:
                continue
            out.extend(self._unsafe(value, scope, following))
        return out


def _numeric_text_spec(spec: str) -> bool:
    return bool(spec) and (spec[-1] in NUMERIC_SPEC_TYPES or "," in spec or "_" in spec)


def _numeric_spec(spec: ast.expr | None) -> bool:
    """Whether an f-string field's format spec makes a number of it (a text there raises): {x:.2f}, {n:,}, {p:.0%}."""
    if not isinstance(spec, ast.JoinedStr) or not spec.values:
        return False
    last = spec.values[-1]
    text = "".join(v.value for v in spec.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    if isinstance(last, ast.Constant) and isinstance(last.value, str) and last.value:
        return last.value[-1] in NUMERIC_SPEC_TYPES or "," in text or "_" in text
    return False


def _is_text_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _is_number_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _percent_conversions(template: str) -> list[str]:
    out, i = [], 0
    while i < len(template):
        if template[i] == "%":
            j = i + 1
            while j < len(template) and template[j] not in "diouxXeEfFgGcrsa%":
                j += 1
            if j < len(template):
                out.append(template[j])
            i = j + 1
        else:
            i += 1
    return out


def check_source(source: str, filename: str = "<test>", module: str = "pages.test", *,
                 builders: dict[str, str] | None = None, owned: dict[str, str] | None = None,
                 trusted: dict[tuple[str, str], str] | None = None,
                 appenders: dict[str, str] | None = None) -> list[str]:
    """The ``file:line: call st.X interpolates EXPR unescaped`` lines of one module's source (its allowlists: the
    project's unless given)."""
    return Checker(source, filename, module, builders, owned, trusted, appenders).run().problems


def project_files() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").glob("*.py"))]


def check_project() -> tuple[int, list[str]]:
    """(markdown calls examined, problems) over app.py, pages/ and ui/, and the builders' modules elsewhere."""
    files = project_files()
    modules = {module_name(p, ROOT) for p in files}
    for name in (*BUILDERS, *APPENDERS):
        owner = name.rsplit(".", 1)[0]
        if owner not in modules:
            files.append(ROOT / (owner.replace(".", "/") + ".py"))
            modules.add(owner)
    calls, problems = 0, []
    for path in files:
        checker = Checker(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)), module_name(path, ROOT)).run()
        calls += checker.calls
        problems.extend(checker.problems)
    return calls, problems


# -- the project ---------------------------------------------------------------------------------------------------
def test_the_pages_draw_no_outside_text_as_markdown() -> None:
    calls, problems = check_project()
    assert calls > 100, f"only {calls} markdown calls found: is the checker still finding them?"
    assert not problems, ("outside text drawn as markdown (wrap it in ui.safe_text.escape or code):\n"
                          + "\n".join(problems))


def test_every_allowlisted_function_exists() -> None:
    """An entry of OWNED, BUILDERS or APPENDERS names a function or value that is there (a renamed one would leave a
    stale pass), and a TRUSTED expression is still in its file."""
    for name in (*OWNED, *BUILDERS, *APPENDERS):
        module, _, function = name.rpartition(".")
        path = ROOT / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        found |= {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                  for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        assert function in found, f"{name}: no such function in {path.relative_to(ROOT)}"
    for file, expression in TRUSTED:
        tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
        assert any(ast.unparse(n) == expression for n in ast.walk(tree) if isinstance(n, ast.expr)), (file, expression)


# -- the checker itself --------------------------------------------------------------------------------------------
BAD = '''
import streamlit as st
def show(run):
    st.markdown(f"**{run.label}** trained")
'''
GOOD = '''
import streamlit as st
from ui.safe_text import escape
def show(run):
    st.markdown(f"**{escape(run.label)}** trained")
'''


def test_the_checker_flags_the_bad_source_and_passes_the_good() -> None:
    assert check_source(BAD, "bad.py") == ["bad.py:4: call st.markdown interpolates run.label unescaped"]
    assert check_source(GOOD, "good.py") == []


@pytest.mark.parametrize("source", [
    'st.info(f"{x.name} left")',
    'st.caption("run " + run.note)',
    'st.warning("%s failed" % error)',
    'st.error("{} failed".format(error))',
    'st.markdown(", ".join(names))',
    'st.markdown(", ".join(n.upper() for n in names))',
    'col.caption(f"on {device}")',
    'placeholder.success(f"{run.target} done")',
    'st.metric(f"{name}", 1)',
    'st.metric("speed", f"{target}")',
    'st.metric("speed", 1, delta=f"{target}")',
    'st.expander(f"Run {run.label}")',
    'st.button(label=f"Stop {name}")',
    'st.tabs(["one", f"{name}"])',
    'st.write("a", x.name)',
    'st.toast(str(exc))',
    'st.markdown(f"{x:>10}")',  # an alignment is no number: a text can be aligned
    "st.markdown(f'{(\"fixed\" if c else b.name)}')",
    'st.info(msg, help=f"{x.note}")',
])
def test_the_checker_flags_each_form_of_unescaped_text(source: str) -> None:
    body = ("import streamlit as st\n"
            "def f(x, run, error, names, col, placeholder, device, name, target, exc, c, a, b):\n")
    problems = check_source(body + "    msg = 'fixed'\n    " + source + "\n", "t.py")
    assert len(problems) == 1, problems
    assert problems[0].startswith("t.py:4: call "), problems


@pytest.mark.parametrize("source", [
    'st.info(f"{escape(x.name)} left")',
    'st.caption("run " + code(run.note))',
    'st.warning("%s failed, %d times" % (escape(error), n))',
    'st.error("{} failed {:.1f}".format(safe_text.escape(error), ratio))',
    'st.markdown(", ".join(code(n) for n in names))',
    'col.caption(f"on {device:.2f} and {count:,} and {share:.0%}")',
    'st.metric("speed", f"{ratio:.1f}x", delta=f"{n:+d}")',
    'st.expander(f"Run {len(names)}")',
    'st.tabs(["one", "two"])',
    'st.markdown(f"**{label}**")',  # label is bound below to an escaped value
    'st.warning(msg)',  # msg is bound to a safe f-string
    'st.markdown(f"{count} runs in {seconds(t)}")',  # count is a parameter annotated int; seconds is owned
    'st.markdown("-" * 3 + f"{(escape(a) if c else code(b))}")',
    'log.info(f"{x.name}")',  # a logger's, not markdown
    'handle.write(f"{x.name}")',  # a file's write, not Streamlit's
    'st.text(f"{x.name}")',  # drawn literally
    'st.markdown(line(x))',  # a builder
])
def test_the_checker_passes_safe_forms(source: str) -> None:
    head = ("import streamlit as st\nfrom ui import safe_text\nfrom ui.safe_text import code, escape\n"
            "from bench.output.display import seconds\n"
            "def line(x):\n    return f'**{escape(x.name)}**'\n"
            "def f(x, run, error, names, col, device, ratio, n, share, a, b, c, t, log, handle, count: int):\n"
            "    label = escape(x.label)\n    msg = f'{code(x.note)} is {n:.1f}'\n    msg += ' more'\n")
    owned = {"bench.output.display.seconds": "formats a float"}
    assert check_source(head + "    " + source + "\n", "t.py", builders={"pages.test.line": "a line"},
                        owned=owned) == []


def test_the_checker_follows_a_helper_variable_and_checks_a_builders_returns() -> None:
    source = '''
import streamlit as st
def line(run):
    return f"**{run.label}**"
def show(run, flag):
    msg = f"{run.note} ended"
    if flag:
        msg = "fixed words"
    st.warning(msg)
    st.markdown(line(run))
'''
    assert check_source(source, "t.py", builders={"pages.test.line": "a line"}) == [
        "t.py:4: return of pages.test.line interpolates run.label unescaped",
        "t.py:9: call st.warning interpolates run.note unescaped",  # the value msg was bound to
    ]


@pytest.mark.parametrize("source", [
    'st.table([{"name": g.name, "memory": round(g.mib / 1024, 1)} for g in gpus])',
    'st.table(pd.DataFrame([{"machine": m.name} for m in machines]))',
    'st.table(rows().drop(columns=["x"]))',  # rows() below returns an unescaped cell
    'st.radio("Device", choices, format_func=lambda d: "GPU " + d.label)',
    'st.radio("Device", choices)',  # its options are drawn as markdown
    'st.progress(0.5, text=f"{x.phase}…")',
    'st.spinner(f"Measuring {x.target}")',
    '(st.success if c else st.warning)(f"{x.name}")',
    'st.caption(", ".join(f"{n}" for n in names))',  # a comprehension's variable is not the module's n
    'st.markdown(ICONS.get(x.kind, x.kind))',  # the default is the record's word
])
def test_the_checker_flags_tables_options_progress_and_more(source: str) -> None:
    head = ("import pandas as pd\nimport streamlit as st\nn = 'fixed'\nICONS = {'a': ':material/x:'}\n"
            "def rows():\n    return pd.DataFrame([{'a': y.name} for y in ys])\n"
            "def f(x, gpus, machines, choices, c, names):\n")
    problems = check_source(head + "    " + source + "\n", "t.py")
    assert len(problems) == 1, problems
    assert problems[0].startswith("t.py:8: call "), problems


@pytest.mark.parametrize("source", [
    'st.table([{"name": escape(g.name), "memory": round(g.mib / 1024, 1)} for g in gpus])',
    'st.table(rows().drop(columns=["x"]))',
    'st.radio("Device", choices, format_func=lambda d: escape(d).upper())',
    'st.progress(0.5, text=f"{escape(x.phase)}…")',
    '(st.success if c else st.warning)(f"{code(x.name)}")',
    'st.markdown(ICONS.get(x.kind, "") + ICONS[x.kind] + {True: "yes", False: "no"}[c])',
    'st.caption(live_messages.NVML_NOTE + KNOBS["host-bound"])',  # constants of project modules, checked there
    'st.caption(x.fix)',  # trusted for this file and expression
])
def test_the_checker_passes_escaped_tables_known_constants_and_trusted_expressions(source: str) -> None:
    head = ("import pandas as pd\nimport streamlit as st\nfrom ui import live_messages\n"
            "from bench.analysis.diagnosis import KNOBS\nfrom ui.safe_text import code, escape\n"
            "ICONS = {'a': ':material/x:'}\n"
            "def rows():\n    return pd.DataFrame([{'a': escape(y.name)} for y in ys])\n"
            "def f(x, gpus, choices, c):\n")
    assert check_source(head + "    " + source + "\n", "t.py", trusted={("t.py", "x.fix"): "a test"}) == []


def test_the_checker_checks_what_an_appender_appends_and_reads_owned_values() -> None:
    source = '''
import streamlit as st
from bench.plans import models
from ui.safe_text import code
def parse(params, state):
    for name in params:
        state.notes.append(f"{code(name)} was ignored")
        state.notes.append(f"{name} was ignored")
    return state
def show(key):
    st.caption(models.PRESETS[key].description)
    st.caption(models.SIZES[key] + models.plan(key).describe())  # SIZES: a literal tuple, checked there
'''
    assert check_source(source, "t.py", owned={"bench.plans.models.PRESETS": "the presets"},
                        appenders={"pages.test.parse": "notes"}) == [
        "t.py:8: state.notes.append in pages.test.parse interpolates name unescaped",
        "t.py:12: call st.caption interpolates models.plan(key).describe() unescaped",
    ]
