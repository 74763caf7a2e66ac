"""Parse one cleaned TeX math expression into a small tree, with no `eval` anywhere.

Answers come from agents, so they are data: this parser accepts only arithmetic,
powers, roots, fractions, binomials, factorials, floor/ceiling, absolute value, a few
named functions and constants, and variables; anything else raises `ParseError` and the
caller treats the answer as prose. Trees are nested tuples, turned into sympy objects by
`gitswarm.referee.symbolic`:

    ("num", "1.5") ("sym", "x_1") ("const", "pi" | "E" | "oo") ("neg", a)
    ("+" | "-" | "*" | "/" | "^", a, b) ("call", name, a, ...)
"""

from __future__ import annotations

import re

Tree = tuple
_TOKEN = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+|\\[a-zA-Z]+|\\[{}|]|[a-zA-Z]|!!|[-+*/^_(){}\[\]|!',])")
FUNCTIONS = {"sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh",
             "cosh", "tanh", "exp", "ln", "log", "lg"}
GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "vartheta",
         "iota", "kappa", "lambda", "mu", "nu", "xi", "rho", "varrho", "sigma", "tau",
         "upsilon", "phi", "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta",
         "Lambda", "Xi", "Sigma", "Phi", "Psi", "Omega"}
CONSTANTS = {"\\pi": "pi", "\\infty": "oo", "e": "E"}
PROSE = {"all", "and", "or", "for", "some", "where", "if", "otherwise", "odd", "even", "is",
         "are", "no", "of", "the", "such", "that", "with", "only", "any", "not", "none", "to",
         "on", "in", "as", "be", "an", "at", "by"}


class ParseError(ValueError):
    """The text is not an expression this parser accepts."""


def tokenize(text: str) -> list[str]:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise ParseError(f"unexpected {text[pos:pos + 10]!r}")
        tokens.append(match.group(1))
        pos = match.end()
    return tokens


def looks_like_prose(text: str) -> bool:
    """Words (not products of one-letter variables) in `text`."""
    words = re.findall(r"(?<![\\a-zA-Z])[a-zA-Z]{2,}", text)
    return any(len(word) > 3 or word.lower() in PROSE for word in words)


def parse(text: str) -> Tree:
    """The tree of one expression; `ParseError` when it is not one."""
    if looks_like_prose(text):
        raise ParseError("prose")
    parser = _Parser(tokenize(text))
    tree = parser.expr()
    if parser.peek() is not None:
        raise ParseError(f"unexpected {parser.peek()!r}")
    return tree


def _is_number(token: str | None) -> bool:
    return token is not None and (token[0].isdigit() or token[0] == ".")


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise ParseError(f"expected {expected or 'more'}, found {token!r}")
        self.pos += 1
        return token

    def expr(self) -> Tree:
        tree = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            tree = (op, tree, self.term())
        return tree

    def term(self) -> Tree:
        tree = self.unary()
        while True:
            token = self.peek()
            if token in ("*", "/", "\\cdot", "\\div"):
                self.take()
                tree = ("/" if token in ("/", "\\div") else "*", tree, self.unary())
            elif self._starts_factor(token) or (_is_number(token) and tree[0] != "num"):
                tree = ("*", tree, self.power())  # 2^a 3^b and (n-2)2^n are products too
            else:
                return tree

    def _starts_factor(self, token: str | None) -> bool:
        if token is None:
            return False
        if _is_number(token):
            return False  # "2 3" is not a product a person writes
        return token.isalpha() or token in ("(", "{") or (
            token.startswith("\\") and token[1:] not in ("cdot", "div", "right", "rfloor",
                                                         "rceil", "}", "|", "le", "ge"))

    def unary(self) -> Tree:
        if self.peek() in ("-", "+"):
            sign = self.take()
            operand = self.unary()
            return ("neg", operand) if sign == "-" else operand
        return self.power()

    def power(self) -> Tree:
        base = self.postfix(self.primary())
        if self.peek() == "^":
            self.take()
            token = self.peek()
            if token in ("-", "+"):
                exponent = self.unary()
            elif token is not None and token[0].isdigit():  # 2^10 means 1024 in plain text
                exponent = ("num", self.take())
            else:
                exponent = self.atom_arg()
            return ("^", base, self.postfix(exponent))
        return base

    def postfix(self, tree: Tree) -> Tree:
        while self.peek() in ("!", "!!", "'"):
            token = self.take()
            if token == "'":
                raise ParseError("primes are not supported")
            tree = ("call", "factorial" if token == "!" else "factorial2", tree)
        return tree

    def atom_arg(self) -> Tree:
        """A TeX argument: a group, or a single token (`\\frac12`, `x^2`, `2^n`)."""
        token = self.peek()
        if token == "{":
            return self.group()
        if token is not None and token[0].isdigit() and len(token) > 1 and "." not in token:
            self.tokens[self.pos] = token[1:]  # \frac12 is \frac{1}{2}
            return ("num", token[0])
        return self.primary()

    def group(self) -> Tree:
        self.take("{")
        tree = self.expr()
        self.take("}")
        return tree

    def primary(self) -> Tree:
        token = self.take()
        if token[0].isdigit() or token[0] == ".":
            return ("num", token)
        if token == "(":
            tree = self.expr()
            self.take(")")
            return tree
        if token == "{":
            self.pos -= 1
            return self.group()
        if token in ("|", "\\|"):
            tree = self.expr()
            self.take(token)
            return ("call", "Abs", tree)
        if token.isalpha():
            return self.symbol(token)
        if token.startswith("\\"):
            return self.command(token[1:])
        raise ParseError(f"unexpected {token!r}")

    def symbol(self, letter: str) -> Tree:
        if letter in CONSTANTS and self.peek() != "_":
            return ("const", CONSTANTS[letter])
        if self.peek() != "_":
            return ("sym", letter)
        self.take("_")
        sub = self.take()
        if sub == "{":
            start = self.pos
            if "}" not in self.tokens[start:]:
                raise ParseError("expected '}' closing the subscript")
            self.pos = self.tokens.index("}", start) + 1
            sub = "".join(self.tokens[start : self.pos - 1])
        if not re.fullmatch(r"[a-zA-Z0-9]+", sub):
            raise ParseError(f"unsupported subscript {sub!r}")
        return ("sym", f"{letter}_{sub}")

    def command(self, name: str) -> Tree:
        if f"\\{name}" in CONSTANTS:
            return ("const", CONSTANTS[f"\\{name}"])
        if name in GREEK:
            return self.symbol(name)
        if name in ("bar", "hat", "tilde", "overline", "vec"):
            letter = self.atom_arg()
            if letter[0] != "sym":
                raise ParseError(f"\\{name} of a non-variable")
            return ("sym", f"{letter[1]}_{name}")
        if name == "frac":
            return ("/", self.atom_arg(), self.atom_arg())
        if name == "binom":
            return ("call", "binomial", self.atom_arg(), self.atom_arg())
        if name == "sqrt":
            return self.sqrt()
        if name in ("lfloor", "lceil"):
            tree = self.expr()
            self.take("\\r" + name[1:])
            return ("call", "floor" if name == "lfloor" else "ceiling", tree)
        if name in FUNCTIONS:
            return self.function(name)
        raise ParseError(f"unsupported command \\{name}")

    def sqrt(self) -> Tree:
        if self.peek() == "[":
            self.take("[")
            index = self.expr()
            self.take("]")
            return ("call", "root", self.atom_arg(), index)
        return ("call", "sqrt", self.atom_arg())

    def function(self, name: str) -> Tree:
        base = None
        if name == "log" and self.peek() == "_":
            self.take("_")
            base = self.atom_arg()
        power = None
        if self.peek() == "^":  # \cos^2 x is (\cos x)^2; \sin^{-1} would be arcsin
            self.take("^")
            power = self.atom_arg()
            if power[0] != "num":
                raise ParseError("only positive integer powers of functions")
        arg = self.power() if self.peek() not in ("(", "{") else self.primary()
        call = _apply(name, arg, base)
        return ("^", call, power) if power else call


def _apply(name: str, arg: Tree, base: Tree | None) -> Tree:
    if name in ("ln", "log") and base is None:
        return ("call", "log", arg)
    if name == "lg":
        return ("call", "log", arg, ("num", "10"))
    return ("call", "log", arg, base) if base is not None else ("call", name, arg)
