#!/usr/bin/env python3
"""Builds a samples file from a local gitleaks checkout, for the `#[ignore]`d measurement in
`gitleaks_tests.rs` (issue 33). Python standard library only.

    python3 gateway/src/secrets/gitleaks_samples.py /path/to/gitleaks > /tmp/gitleaks-samples.jsonl

Each rule file under `cmd/generate/config/rules/` holds true positives (`tps`, `r.TPs`) and
false positives (`fps`, `r.FPs`) written as Go expressions: string literals, concatenation,
`fmt.Sprintf`, `append`, the checkout's own sample generators (`GenerateSampleSecret(s)`, read
from `cmd/generate/config/utils/generate.go`) and random secrets made from a regular expression
(`secrets.NewSecret(...)`), which this script makes itself with a fixed seed. A small evaluator
reads those expressions; a sample it cannot read is skipped with a warning on stderr.

Output, one JSON object a line: `{"rule", "kind": "tp"|"fp", "text", "secret", "guessed"}`.
`secret` is what must be gone from a redacted text: the secret given to a sample generator, or
the longest generated part; for a literal sample, the most key-like token of it (`guessed`).
Nothing of gitleaks is kept in this repository: the samples are built from the checkout.
"""

import json
import math
import random
import re
import sys
from pathlib import Path

try:  # Python 3.11+
    import re._parser as sre_parse  # type: ignore
    import re._constants as sre_constants  # type: ignore
except ImportError:  # pragma: no cover
    import sre_constants  # type: ignore
    import sre_parse  # type: ignore

# Alphabets of the helpers the rule files call, by what they are (not copied patterns).
HELPERS = {
    "hex": "[a-f0-9]{%s}",
    "alphanumeric": "[a-zA-Z0-9]{%s}",
    "alphanumericextended": "[a-zA-Z0-9_=-]{%s}",
    "alphanumericextendedshort": "[a-zA-Z0-9_-]{%s}",
    "alphanumericextendedlong": "[a-zA-Z0-9_.=-]{%s}",
    "numeric": "[0-9]{%s}",
}
UUID = "[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}"


class Unreadable(Exception):
    """An expression this evaluator does not know."""


# ---------------------------------------------------------------- tokens


def go_string(body):
    """The value of an interpreted Go string literal's body."""
    out, i = [], 0
    simple = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a",
              "b": "\b", "f": "\f", "v": "\v"}
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        n = body[i + 1]
        if n in simple:
            out.append(simple[n])
            i += 2
        elif n == "x":
            out.append(chr(int(body[i + 2:i + 4], 16)))
            i += 4
        elif n in "uU":
            k = 4 if n == "u" else 8
            out.append(chr(int(body[i + 2:i + 2 + k], 16)))
            i += 2 + k
        else:
            out.append(n)
            i += 2
    return "".join(out)


TOKEN = re.compile(
    r"(?P<ws>[ \t\r]+)|(?P<nl>\n)|(?P<lc>//[^\n]*)|(?P<bc>/\*.*?\*/)"
    r"|(?P<raw>`[^`]*`)|(?P<str>\"(?:[^\"\\\n]|\\.)*\")|(?P<chr>'(?:[^'\\\n]|\\.)*')"
    r"|(?P<num>\d+)|(?P<id>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>\.\.\.|:=|\+=|==|!=|&&|\|\||[{}()\[\],.:;=+*&!<>|-])",
    re.S,
)


def tokens(src):
    out, at = [], 0
    while at < len(src):
        m = TOKEN.match(src, at)
        if not m:
            at += 1  # a character this reader has no use for
            continue
        at = m.end()
        kind = m.lastgroup
        if kind in ("ws", "lc", "bc"):
            continue
        text = m.group()
        if kind == "raw":
            out.append(("str", text[1:-1].replace("\r", "")))
        elif kind == "str":
            out.append(("str", go_string(text[1:-1])))
        else:
            out.append((kind, text))
    return out


# ---------------------------------------------------------------- regex samples


def sample_of(pattern, rng):
    """A random string matched by `pattern` (a Go RE2 pattern, read by Python's parser)."""
    p = pattern.replace("[[:alnum:]]", "[a-zA-Z0-9]").replace(r"\z", "")
    p = re.sub(r"\(\?-?i\)", "", p).replace("(?-i:", "(?:")
    parsed = sre_parse.parse(p)
    return "".join(emit(parsed, rng))


PRINTABLE = [chr(c) for c in range(33, 127)]


def emit(items, rng):
    c = sre_constants
    out = []
    for op, av in items:
        if op == c.LITERAL:
            out.append(chr(av))
        elif op == c.NOT_LITERAL:
            out.append(rng.choice([x for x in PRINTABLE if ord(x) != av]))
        elif op == c.ANY:
            out.append(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789"))
        elif op == c.IN:
            out.append(rng.choice(class_chars(av)))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = av
            hi = lo + 8 if hi == c.MAXREPEAT else hi
            hi = max(lo, min(hi, lo + 8)) if hi - lo > 8 else hi
            for _ in range(rng.randint(lo, hi)):
                out.extend(emit(sub, rng))
        elif op == c.SUBPATTERN:
            out.extend(emit(av[-1], rng))
        elif op == c.BRANCH:
            out.extend(emit(rng.choice(av[1]), rng))
        elif op in (c.AT, c.GROUPREF):
            continue
        else:
            raise Unreadable(f"regex op {op}")
    return out


def class_chars(av):
    c = sre_constants
    chars, negate = set(), False
    cats = {
        c.CATEGORY_DIGIT: "0123456789",
        c.CATEGORY_WORD: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
        c.CATEGORY_SPACE: " ",
    }
    for op, v in av:
        if op == c.NEGATE:
            negate = True
        elif op == c.LITERAL:
            chars.add(chr(v))
        elif op == c.RANGE:
            chars.update(chr(x) for x in range(v[0], v[1] + 1))
        elif op == c.CATEGORY:
            chars.update(cats.get(v, ""))
    if negate:
        chars = set(PRINTABLE) - chars
    return sorted(chars)


# ---------------------------------------------------------------- values


class Text:
    """A string value and the generated secrets inside it."""

    def __init__(self, text, secrets=()):
        self.text, self.secrets = text, list(secrets)

    def __add__(self, other):
        return Text(self.text + other.text, self.secrets + other.secrets)


def as_text(v):
    if isinstance(v, Text):
        return v
    raise Unreadable("a list where a string was expected")


class Evaluator:
    def __init__(self, templates, single, rng):
        self.templates, self.single, self.rng = templates, single, rng
        self.env = {}

    def secret(self, pattern):
        value = sample_of(pattern, self.rng)
        return Text(value, [value])

    def call(self, name, args):
        short = name.split(".")[-1]
        low = short.lower()
        if low == "generatesamplesecret":
            ident, s = as_text(args[0]), as_text(args[1])
            return Text(self.single.replace("{i}", ident.text).replace("{s}", s.text), [s.text])
        if low == "generatesamplesecrets":
            ident, s = as_text(args[0]), as_text(args[1])
            return [Text(t.replace("{i}", ident.text).replace("{s}", s.text), [s.text])
                    for t in self.templates]
        if low == "newsecret":
            return self.secret(as_text(args[0]).text)
        if low in HELPERS:
            return Text(HELPERS[low] % as_text(args[0]).text)
        if low == "hex8_4_4_4_12":
            return Text(UUID)
        if name == "fmt.Sprintf":
            fmt = as_text(args[0])
            parts = re.split(r"(%%|%[sdvq])", fmt.text)
            out, rest = Text(""), list(args[1:])
            for part in parts:
                if part == "%%":
                    out = out + Text("%")
                elif part.startswith("%") and len(part) == 2:
                    out = out + as_text(rest.pop(0))
                else:
                    out = out + Text(part)
            return out
        if name == "strings.Repeat":
            return Text(as_text(args[0]).text * int(args[1]))
        if name == "append":
            first = args[0]
            if not isinstance(first, list):
                raise Unreadable("append to a non-list")
            out = list(first)
            for a in args[1:]:
                out.extend(a if isinstance(a, list) else [a])
            return out
        raise Unreadable(f"call {name}")

    def ident(self, name):
        key = TARGETS.get(name.split(".")[-1], name)
        if key in self.env:
            return self.env[key]
        m = re.fullmatch(r"sample([A-Za-z]+?)(\d+)Token", name)
        if m and m.group(1).lower() in HELPERS:
            return self.secret(HELPERS[m.group(1).lower()] % m.group(2))
        raise Unreadable(f"name {name}")


class Parser:
    """Go expressions over a token list, from `at`."""

    def __init__(self, toks, ev):
        self.t, self.ev = toks, ev

    def peek(self, at):
        while at < len(self.t) and self.t[at][0] == "nl":
            at += 1
        return at, (self.t[at] if at < len(self.t) else ("eof", ""))

    def expect(self, at, text):
        at, tok = self.peek(at)
        if tok[1] != text:
            raise Unreadable(f"expected {text}, got {tok[1]}")
        return at + 1

    def expr(self, at):
        value, at = self.primary(at)
        while True:
            nxt, tok = self.peek(at)
            if tok == ("op", "+"):
                rhs, at = self.primary(nxt + 1)
                value = as_text(value) + as_text(rhs)
            else:
                return value, at

    def primary(self, at):
        at, tok = self.peek(at)
        kind, text = tok
        if kind == "str":
            return Text(text), at + 1
        if kind == "num":
            return int(text), at + 1
        if tok == ("op", "["):  # []string{...}
            at = self.expect(at + 1, "]")
            at = self.expect(at, "string")
            return self.composite(at)
        if tok == ("id", "map"):  # map[string]string{...}
            at = self.expect(at + 1, "[")
            at = self.expect(at, "string")
            at = self.expect(at, "]")
            at = self.expect(at, "string")
            return self.composite(at)
        if kind == "id":
            name, at = text, at + 1
            while True:
                nxt, t2 = self.peek(at)
                if t2 == ("op", ".") and self.peek(nxt + 1)[1][0] == "id":
                    name += "." + self.peek(nxt + 1)[1][1]
                    at = self.peek(nxt + 1)[0] + 1
                else:
                    break
            nxt, t2 = self.peek(at)
            if t2 == ("op", "("):
                args, at = self.args(nxt + 1)
                return self.ev.call(name, args), at
            return self.ev.ident(name), at
        raise Unreadable(f"token {text!r}")

    def args(self, at):
        args = []
        while True:
            nxt, tok = self.peek(at)
            if tok == ("op", ")"):
                return args, nxt + 1
            value, at = self.expr(nxt)
            nxt, tok = self.peek(at)
            if tok == ("op", "..."):
                at = nxt + 1
                nxt, tok = self.peek(at)
            args.append(value)
            if tok == ("op", ","):
                at = nxt + 1

    def composite(self, at):
        at = self.expect(at, "{")
        items = []
        while True:
            nxt, tok = self.peek(at)
            if tok == ("op", "}"):
                return items, nxt + 1
            value, at = self.expr(nxt)
            nxt, tok = self.peek(at)
            if tok == ("op", ":"):  # a map's key: the value follows
                value, at = self.expr(nxt + 1)
                nxt, tok = self.peek(at)
            items.append(value)
            if tok == ("op", ","):
                at = nxt + 1


# ---------------------------------------------------------------- rule files

TARGETS = {"tps": "TPS", "TPs": "TPS", "fps": "FPS", "FPs": "FPS"}


def read_templates(checkout):
    src = (checkout / "cmd/generate/config/utils/generate.go").read_text()
    one = re.search(r"func GenerateSampleSecret\(.*?Sprintf\((\"(?:[^\"\\]|\\.)*\")", src, re.S)
    single = go_string(one.group(1)[1:-1]).replace("%s", "{i}", 1).replace("%s", "{s}", 1)
    body = src[src.index("func GenerateSampleSecrets"):]
    toks = tokens(body[body.index("map[string]string"):])
    values, _ = Parser(toks, Evaluator([], single, None)).expr(0)
    return [v.text for v in values], single


def words(tok):
    """How much a token looks like a key rather than a name: words joined by `_`, `.` or `-`
    (`BUNDLE_GEMS__COM`) least, one word of one case (`cafebabe`) less."""
    if re.fullmatch(r"[a-z]+(?:[_.-]+[a-z]+)+|[A-Z]+(?:[_.-]+[A-Z]+)+", tok):
        return 0.02
    if re.fullmatch(r"(?:[A-Z][a-z]+)+[.!]?|[a-z]+[.!]", tok):  # `Authorization`, `instance.`
        return 0.05
    return 0.3 if re.fullmatch(r"[a-z]+|[A-Z]+|[a-z]{4,}[0-9]{1,2}", tok) else 1


def key_like(text):
    """The most key-like token of a literal sample: long, varied, not a host, an address, a
    variable or a name made of lowercase words."""
    best, score = None, 0.0
    for tok in re.split(r"[\s\"'`,;()<>{}\[\]\\=:/@#?&]+", text):
        if len(tok) < 8 or tok.startswith("$") or re.fullmatch(r"[\w.+-]*@?[\w-]+(\.[a-z]+)+", tok):
            continue
        counts = {c: tok.count(c) for c in set(tok)}
        h = -sum(n / len(tok) * math.log2(n / len(tok)) for n in counts.values())
        mixed = any(c.isdigit() for c in tok) + any(c.isupper() for c in tok)
        s = h * len(tok) * (1 + mixed) * words(tok)
        if s > score:
            best, score = tok, s
    return best


def rule_samples(path, templates, single, rng):
    toks = tokens(path.read_text())
    ev = Evaluator(templates, single, rng)
    parser = Parser(toks, ev)
    rules, rule, i = [], None, 0

    def close():
        if rule is not None:
            rules.append((rule, ev.env.get("TPS", []), ev.env.get("FPS", [])))

    globals_ = {}
    while i < len(toks):
        kind, text = toks[i]
        if (kind, text) == ("id", "func"):
            close()
            rule = None
            ev.env = dict(globals_)
            i += 1
            continue
        if (kind, text) == ("id", "RuleID"):
            at, colon = parser.peek(i + 1)
            at2, tok = parser.peek(at + 1)
            if colon == ("op", ":") and tok[0] == "str":
                rule = tok[1]
                i = at2 + 1
                continue
        # `name := expr`, `name = expr`, `r.TPs = expr`, `var name = expr`
        name, at = None, i
        if kind == "id":
            name, at = text, i + 1
            if name == "r" and toks[at:at + 2] and toks[at][1] == "." and at + 1 < len(toks):
                name, at = toks[at + 1][1], at + 2
        if name is not None and at < len(toks) and toks[at][1] in (":=", "="):
            try:
                value, end = parser.expr(at + 1)
            except (Unreadable, IndexError, ValueError, re.error) as e:
                if name in TARGETS:
                    print(f"warning: {path.name} {rule}: {name}: {e}", file=sys.stderr)
                i += 1
                continue
            key = TARGETS.get(name, name)
            ev.env[key] = value
            if rule is None and name not in TARGETS and ev.env is not None:
                globals_[key] = value
            i = end
            continue
        i += 1
    close()
    return rules


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    checkout = Path(argv[1])
    rng = random.Random(33)
    templates, single = read_templates(checkout)
    files = sorted((checkout / "cmd/generate/config/rules").glob("*.go"))
    seen, with_tps, lines = set(), set(), 0
    for path in files:
        if path.name.endswith("_test.go"):
            continue
        for rule, tps, fps in rule_samples(path, templates, single, rng):
            seen.add(rule)
            for kind, values in (("tp", tps), ("fp", fps)):
                for v in values if isinstance(values, list) else [values]:
                    if not isinstance(v, Text):
                        continue
                    secret = max(v.secrets, key=len) if v.secrets else None
                    guessed = kind == "tp" and secret is None
                    if guessed:
                        secret = key_like(v.text)
                    if kind == "tp" and not secret:
                        print(f"warning: {rule}: no secret in {v.text!r}", file=sys.stderr)
                        continue
                    if kind == "tp":
                        with_tps.add(rule)
                    row = {"rule": rule, "kind": kind, "text": v.text,
                           "secret": secret if kind == "tp" else None, "guessed": guessed}
                    print(json.dumps(row, ensure_ascii=False))
                    lines += 1
    print(f"{lines} samples, {len(seen)} rules, {len(with_tps)} with true positives; "
          f"without: {', '.join(sorted(seen - with_tps)) or 'none'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
