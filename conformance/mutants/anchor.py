"""Where a mutant's edit lands in a function's source: a token pattern that must match once.

Why tokens: a mutant names the statement it changes by a short snippet of the engine's code
(``"if not retain_graph and node._saved:"``). Matched as literal text, every reformatting of the
engine (a line wrapped, spaces around an operator, ``'`` for ``"``, a comment added, a block
indented one level deeper) broke the anchor and three commits had to re-anchor the catalogue by
hand. Matched as Python tokens, such changes do not matter: the pattern and the function's
source are both read as token sequences (comments, indentation and line continuations inside
brackets dropped; the end of a statement kept, so ``"return self\\n"`` does not match
``return self._x``; string literals compared by value), and the pattern must occur exactly
once. What the snippet *says* still has to be in the function: a change of the code itself is
a change the mutant's author has to look at, and :class:`AnchorError` names the mutant, the
function, where it is defined, the pattern and how often it matched.

The replacement text is written as if the matched code started at column 0: its first line
replaces the matched tokens where they stand, its further lines are indented by the
indentation of the line where the match starts. Only the tokens that differ between the
pattern and the replacement are rewritten (the common leading and trailing tokens stay as the
engine wrote them), so a pattern may carry context for uniqueness, across lines and
indentation levels, without the replacement having to reproduce that context's layout.
"""
from __future__ import annotations

import ast
import io
import tokenize

_IGNORED = {tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER,
            tokenize.ENCODING}


class AnchorError(ValueError):
    """A mutant's pattern does not match its function's source exactly once."""

    def __init__(self, target: str, pattern: str, count: int, where: str = "", mutant: str = "") -> None:
        self.target, self.pattern, self.count, self.where, self.mutant = target, pattern, count, where, mutant
        super().__init__(self._message())

    def _message(self) -> str:
        who = f"mutant {self.mutant}: " if self.mutant else ""
        at = f" ({self.where})" if self.where else ""
        fix = ("the engine's code changed: find the statement the mutant plants its bug in and update "
               "the pattern" if self.count == 0 else "lengthen the pattern until it is unique")
        return (f"{who}edit of {self.target}{at}: pattern {self.pattern!r} matches {self.count} times, "
                f"not once; {fix}")

    def naming(self, mutant: str) -> "AnchorError":
        """The same error, naming the mutant whose edit failed."""
        return AnchorError(self.target, self.pattern, self.count, self.where, mutant)


def _key(tok: tokenize.TokenInfo) -> str:
    if tok.type == tokenize.NEWLINE:
        return "\n"
    if tok.type == tokenize.STRING:
        try:
            return repr(ast.literal_eval(tok.string))  # '...' and "..." alike
        except (ValueError, SyntaxError):
            return tok.string
    return tok.string


def tokens(text: str) -> list[tuple[str, int, int]]:
    """(comparison key, start offset, end offset) of each significant token of ``text``.

    ``text`` may be a fragment (a pattern): each line's indentation is ignored, so a fragment
    spanning indentation levels tokenizes, and one that ends inside brackets keeps the tokens
    read so far."""
    lines = text.splitlines(keepends=True)
    leads = [len(line) - len(line.lstrip(" \t")) for line in lines]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    stripped = "".join(line[lead:] for line, lead in zip(lines, leads))
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(stripped).readline):
            if tok.type in _IGNORED or (tok.type == tokenize.NEWLINE and not tok.string):
                continue
            (srow, scol), (erow, ecol) = tok.start, tok.end
            start = starts[srow - 1] + leads[srow - 1] + scol
            end = starts[erow - 1] + leads[erow - 1] + ecol if erow <= len(lines) else len(text)
            out.append((_key(tok), start, end))
    except (tokenize.TokenError, IndentationError):
        pass  # a fragment that ends inside brackets or a string: the tokens read so far
    return out


def find(source: str, pattern: str) -> list[tuple[int, int]]:
    """The token indexes (start, stop) in ``tokens(source)`` of each match of ``pattern``."""
    keys = [k for k, _, _ in tokens(source)]
    wanted = [k for k, _, _ in tokens(pattern)]
    n = len(wanted)
    if not n:
        return []
    return [(i, i + n) for i in range(len(keys) - n + 1) if keys[i:i + n] == wanted]


def _indent_of_line(source: str, offset: int) -> str:
    line = source[source.rfind("\n", 0, offset) + 1:]
    return line[:len(line) - len(line.lstrip(" \t"))]


def _middle(text: str, toks: list, head: int, tail: int) -> tuple[int, int]:
    """The span of ``text`` that differs: between its ``head`` first and ``tail`` last tokens
    ``toks``, from the end of the head (past the next line's indentation when the head ends a
    line) up to the tail (so the blanks before the tail come with the replacement), or, when
    the tail starts with a line end, up to the last token between (so a comment before the
    line end stays); an empty span where the head ends when nothing is between."""
    if head:
        start = toks[head - 1][2]
        if toks[head - 1][0] == "\n":
            start += len(text[start:]) - len(text[start:].lstrip(" \t"))
    else:
        start = toks[0][1] if toks else 0
    if tail and toks[len(toks) - tail][0] != "\n":
        return start, toks[len(toks) - tail][1]
    between = toks[head:len(toks) - tail]
    return (start, between[-1][2]) if between else (start, start)


def substitute(source: str, pattern: str, replacement: str, target: str = "", where: str = "") -> str:
    """``source`` with the one match of ``pattern`` replaced by ``replacement`` (see the module's
    docstring); :class:`AnchorError` when it matches zero or several times."""
    matches = find(source, pattern)
    if len(matches) != 1:
        raise AnchorError(target, pattern, len(matches), where)
    start, stop = matches[0]
    src = tokens(source)[start:stop]
    indent = _indent_of_line(source, src[0][1])
    first, *rest = replacement.lstrip(" \t").split("\n")
    placed = "\n".join([first, *[(indent + line) if line.strip() else line for line in rest]])
    new = tokens(placed)
    old_keys, new_keys = [k for k, _, _ in src], [k for k, _, _ in new]
    same_head = 0
    while same_head < min(len(src), len(new)) and old_keys[same_head] == new_keys[same_head]:
        same_head += 1
    same_tail = 0
    while (same_tail < min(len(src), len(new)) - same_head
           and old_keys[-1 - same_tail] == new_keys[-1 - same_tail]):
        same_tail += 1
    cut_from, cut_to = _middle(source, src, same_head, same_tail)
    put_from, put_to = _middle(placed, new, same_head, same_tail)
    return source[:cut_from] + placed[put_from:put_to] + source[cut_to:]
