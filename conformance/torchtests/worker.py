"""Runs tests of PyTorch's test file on one engine, in a child process: ``python -m conformance.torchtests.worker``.

Reads a job from stdin (``{"engine": "torch" | "reference", "path": ..., "tests": [...],
"timeout": seconds}``) and writes one line per event to stdout, each starting with ``MARK``:
``{"engine": ..., "version": ...}`` once, then ``{"start": test}`` and ``{"result": {...}}``
per test, so that the parent knows which test was running if the process dies or hangs.
Each test runs in a forked child of the worker (``run_isolated``): tests do not share state.
The file's module-level statements and test classes are executed in a namespace of their own;
an import or a decorator that fails binds a placeholder (``aliasing.Missing``) or turns the one
test into a failure, never the whole run.
"""
from __future__ import annotations

import ast
import builtins
import gc
import inspect
import json
import random
import select
import os
import signal
import sys
import time
import traceback
import unittest

from conformance.alarm import arm_alarm
from conformance.outcome_exceptions import TestTimeout
from conformance.torchtests import aliasing, classify, source, testcase

MARK = "\x1etorchtests\x1f"
_SUPPORT_MODULES = ("torch.testing._internal",)


def _emit(payload: dict) -> None:
    sys.stdout.write("\n" + MARK + json.dumps(payload) + "\n")
    sys.stdout.flush()


def load_engine(engine: str):
    if engine == "reference":
        return aliasing.facade(aliasing.install())
    if engine == "torch":
        import torch

        return torch
    raise ValueError(f"unknown engine {engine!r}")


def _raiser(exc: BaseException):
    def decorate(fn):
        def failing(*args, **kwargs):
            raise exc

        failing.__name__ = getattr(fn, "__name__", "test")
        return failing

    return decorate


def _guard_decorator(make):
    """A decorator expression evaluated safely: if it (or applying it) fails, only that test fails."""
    try:
        decorator = make()
    except BaseException as exc:  # noqa: BLE001 - reported as the test's own failure
        return _raiser(exc)

    def apply(fn):
        try:
            return decorator(fn)
        except BaseException as exc:  # noqa: BLE001
            return _raiser(exc)(fn)

    return apply


class _GuardClassBody(ast.NodeTransformer):
    """In a test class body: decorators go through ``_guard_decorator``, other statements in try."""

    def visit_ClassDef(self, node):  # noqa: N802 - ast's name
        body = []
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stmt.decorator_list = [
                    ast.Call(func=ast.Name("_torchtests_guard_decorator", ast.Load()),
                             args=[ast.Lambda(ast.arguments([], [], None, [], [], None, []), expr)], keywords=[])
                    for expr in stmt.decorator_list]
                body.append(stmt)
            else:
                body.append(ast.Try(body=[stmt], handlers=[ast.ExceptHandler(
                    type=ast.Name("Exception", ast.Load()), name=None, body=[ast.Pass()])], orelse=[], finalbody=[]))
        node.body = body
        return node


def _exec(stmt: ast.stmt, namespace: dict, filename: str) -> None:
    module = ast.Module(body=[stmt], type_ignores=[])
    ast.fix_missing_locations(module)
    exec(compile(module, filename, "exec"), namespace)  # noqa: S102 - running the user's test file is the point


def _import(stmt, namespace: dict, support: dict, filename: str) -> None:
    if isinstance(stmt, ast.ImportFrom) and (stmt.module or "").startswith(_SUPPORT_MODULES):
        for alias in stmt.names:
            name = alias.asname or alias.name
            namespace[name] = support.get(alias.name, aliasing.Missing(f"{stmt.module}.{alias.name}"))
        return
    try:
        _exec(stmt, namespace, filename)
        return
    except Exception:  # noqa: BLE001 - bind what can be bound, placeholders for the rest
        pass
    for alias in stmt.names:
        single = (ast.ImportFrom(module=stmt.module, names=[alias], level=stmt.level)
                  if isinstance(stmt, ast.ImportFrom) else ast.Import(names=[alias]))
        try:
            _exec(single, namespace, filename)
        except Exception:  # noqa: BLE001
            if isinstance(stmt, ast.ImportFrom):
                namespace[alias.asname or alias.name] = aliasing.Missing(f"{stmt.module}.{alias.name}")
            elif alias.asname:
                namespace[alias.asname] = aliasing.Missing(alias.name)


def _wrap_modules(namespace: dict) -> None:
    for key, value in list(namespace.items()):
        namespace[key] = aliasing.facade(value)


def build_namespace(test_file: source.TestFile, torch_module, engine: str) -> tuple[dict, dict[str, str]]:
    """The file's module namespace (imports, helpers, classes) and the classes that failed to build."""
    filename = str(test_file.path)
    namespace = {"__name__": "torchtests_subject", "__file__": filename, "__builtins__": builtins,
                 "_torchtests_guard_decorator": _guard_decorator}
    support = testcase.support(torch_module)
    broken: dict[str, str] = {}
    for stmt in test_file.tree.body:
        if isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test):
            continue
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            _import(stmt, namespace, support, filename)
            if engine == "reference":
                _wrap_modules(namespace)
            continue
        if isinstance(stmt, ast.ClassDef):
            stmt = _GuardClassBody().visit(stmt)
        try:
            _exec(stmt, namespace, filename)
        except Exception as exc:  # noqa: BLE001
            if isinstance(stmt, ast.ClassDef):
                broken[stmt.name] = classify.summary(exc)
    namespace["torch"] = torch_module
    return namespace, broken


def _seed(torch_module) -> None:
    random.seed(0)
    try:
        torch_module.manual_seed(0)
    except Exception:  # noqa: BLE001 - a reference without manual_seed still runs the test
        pass


def run_one(namespace: dict, broken: dict, key: str, timeout: float, torch_module) -> dict:
    cls_name, name = key.split(".", 1)
    record = {"test": key}
    cls = namespace.get(cls_name)
    if not isinstance(cls, type) or not hasattr(cls, name):
        why = broken.get(cls_name, "not defined in the file")
        return {**record, "outcome": "error", "kind": "difference", "detail": f"class {cls_name}: {why}"}
    instance = cls(name)
    method = getattr(instance, name)
    kwargs = {}
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        parameters = {}
    for pname, parameter in parameters.items():
        if pname == "device":
            kwargs["device"] = "cpu"
        elif parameter.default is inspect.Parameter.empty and parameter.kind not in (
                inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            return {**record, "outcome": "skip", "detail": f"needs argument {pname!r}"}
    _seed(torch_module)
    alarm = arm_alarm(timeout)
    timed_out = {"outcome": "fail", "kind": "difference",
                 "detail": f"timeout: still running after {timeout:g} s"}
    try:
        try:
            instance.setUp()
            method(**kwargs)
        finally:
            alarm()  # disarmed first: no interrupt lands in the bookkeeping below
        # the limit passed while its interrupt was lost (conformance/alarm.py): still a timeout
        record.update(timed_out if alarm.fired else {"outcome": "pass"})
    except unittest.SkipTest as exc:
        record.update(outcome="skip", detail=str(exc)[:200])
    except TestTimeout:
        record.update(timed_out)
    except RecursionError as exc:
        record.update(outcome="fail", kind="difference", detail=classify.summary(exc))
    except Exception as exc:  # noqa: BLE001 - every failure is a result
        if os.environ.get("AUTOGRAD_CONFORMANCE_TORCHTESTS_TRACEBACK"):
            traceback.print_exc()
        kind, detail = classify.classify(exc)
        record.update(outcome="fail", kind=kind, detail=detail, error=classify.summary(exc))
    finally:
        try:
            instance.tearDown()
        except Exception:  # noqa: BLE001 - PyTorch's tearDown may use what the engine lacks
            pass
        gc.collect()
    return record


def run_isolated(namespace: dict, broken: dict, key: str, timeout: float, torch_module) -> dict:
    """``run_one`` in a forked child, so that what one test leaves behind (an open hook context,
    a dual level, a crash) cannot change the next test's outcome."""
    if not hasattr(os, "fork"):
        return run_one(namespace, broken, key, timeout, torch_module)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, report, leave without running the parent's cleanup
        os.close(read_end)
        try:
            record = run_one(namespace, broken, key, timeout, torch_module)
        except BaseException as exc:  # noqa: BLE001
            record = {"test": key, "outcome": "fail", "kind": "difference", "detail": classify.summary(exc)}
        sys.stdout.flush()
        sys.stderr.flush()
        with os.fdopen(write_end, "w") as out:
            out.write(json.dumps(record))
        os._exit(0)
    os.close(write_end)
    chunks = []
    deadline = time.monotonic() + timeout + 30
    with os.fdopen(read_end) as pipe:
        while True:
            ready, _, _ = select.select([pipe], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return {"test": key, "outcome": "fail", "kind": "difference",
                        "detail": f"hang: still running after {timeout:g} s, not interruptible"}
            chunk = pipe.read()
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        return {"test": key, "outcome": "fail", "kind": "difference",
                "detail": f"crash: the process died ({_status_text(status)})"}
    return json.loads("".join(chunks))


def _status_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit status {os.WEXITSTATUS(status) if os.WIFEXITED(status) else status}"


def main() -> int:
    job = json.loads(sys.stdin.read())
    torch_module = load_engine(job["engine"])
    _emit({"engine": job["engine"], "version": str(getattr(torch_module, "__version__", "?"))})
    test_file = source.read(job["path"])
    namespace, broken = build_namespace(test_file, torch_module, job["engine"])
    for key in job["tests"]:
        _emit({"start": key})
        _emit({"result": run_isolated(namespace, broken, key, float(job["timeout"]), torch_module)})
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 or sys.stdin.isatty():  # run by hand: one line, as every tool's
        sys.stderr.write("python -m conformance.torchtests.worker: an internal worker that reads "
                         "a JSON job on stdin; run python -m conformance.torchtests instead\n")
        sys.exit(4)
    sys.exit(main())
