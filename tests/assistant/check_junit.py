"""Reads a JUnit XML report of `context-assistant test` with junitparser
(the reader CI systems' plugins share) and checks it says what the run
did: `check_junit.py FILE TESTS FAILURES`."""

import sys

from junitparser import Failure, JUnitXml

path, tests, failures = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
xml = JUnitXml.fromfile(path)
cases = [case for suite in xml for case in suite]
failed = [case for case in cases if any(isinstance(r, Failure) for r in case.result)]
assert len(cases) == tests, f"{path}: {len(cases)} test cases, expected {tests}"
assert len(failed) == failures, f"{path}: {len(failed)} failed, expected {failures}"
for case in failed:
    failure = next(r for r in case.result if isinstance(r, Failure))
    assert failure.message and "expected" in failure.message, f"{case.name}: a failure says what was expected"
for case in cases:
    assert case.name and case.classname, "every test case is named"
print(f"{path}: {len(cases)} test cases, {len(failed)} failed, as expected")
