"""Runs pytest for a CTest entry so that nothing vanishes: `pytest_ctest.py [pytest args…]` runs
`python -m pytest -q -rs -p no:cacheprovider ARGS`, which prints each skipped test with its reason,
and exits as CTest should read it: pytest's failures as failures, exit 5 (no test collected) as a
failure, and a run that passed but skipped any test as 77 (CTest: skipped), so that a missing torch
or h5py is a visible skip, not a silent pass. Under CI=true a skip is a failure: CI has every
dependency, so a skip there means a test that did not run."""
import os
import re
import subprocess
import sys


def main(args):
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *args],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(done.stdout)
    if done.returncode == 5:
        print("pytest_ctest: no test was collected")
        return 1
    if done.returncode != 0:
        return done.returncode
    skipped = re.search(r"(\d+) skipped", done.stdout.splitlines()[-1] if done.stdout else "")
    if skipped:
        print(f"pytest_ctest: {skipped.group(1)} test(s) skipped (reasons above)")
        return 1 if os.environ.get("CI") == "true" else 77
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
