# Frameworks may warn once per process (torch does): each check runs in a fresh interpreter.
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent('''
{preamble}
import warnings

def warned(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [str(x.message) for x in w if "cycle" in str(x.message)]

b = {fw}.randn(3, requires_grad=True, dtype={fw}.float64, device="{device}")
c = b * b
g = warned(lambda: {fw}.autograd.grad(c, b, {fw}.ones_like(c), create_graph=True))
print("GRAD", len(g))
c = b * b
w = warned(lambda: c.backward({fw}.ones_like(c), create_graph=True))
print("BACKWARD", len(w), repr(w[:1]))
b.grad = None
''')

proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
print(proc.stdout, end="")
if proc.returncode != 0:
    print(proc.stderr[-2000:])
    print(f"RESULT: ERROR: RuntimeError: helper process failed (exit status {proc.returncode})")
    raise SystemExit(0)
out = dict(line.split(" ", 1) for line in proc.stdout.splitlines()
           if line.startswith(("GRAD", "BACKWARD")))
if out.get("GRAD", "0") != "0":
    print("RESULT: DIVERGES: autograd.grad(create_graph=True) warned about a reference cycle")
elif out.get("BACKWARD", "0").startswith("0"):
    print("RESULT: DIVERGES: backward(create_graph=True) did not warn about the param <-> grad "
          "reference cycle")
else:
    print("RESULT: PASS")
