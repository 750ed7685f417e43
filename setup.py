"""The build step setup.cfg cannot say: the trace scripts become package data.

dtrace/ and bpftrace/ stay at the top of the repository (their home, next to their READMEs and the
example outputs the tests read); build_py copies them into the built package as zfsmon/share/dtrace/ and
zfsmon/share/bpftrace/, where an installed zfsmon finds them through importlib.resources
(zfsmon.trace.catalog.scripts_root). Nothing is duplicated in the repository. The sdist carries the two
folders (MANIFEST.in), so a wheel built from the sdist gets them too. Everything else is in setup.cfg.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: repository folder -> the files of it an installed zfsmon needs (the scripts and their READMEs)
SCRIPT_DIRS = {"dtrace": ("*.d", "README.md"), "bpftrace": ("*.bt", "README.md")}


class BuildWithScripts(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install runs from the source tree, which has them already
            return
        for folder, patterns in SCRIPT_DIRS.items():
            files = sorted({f for pat in patterns for f in (HERE / folder).glob(pat) if f.is_file()})
            if not files:
                raise SystemExit(f"setup.py: no trace scripts in {HERE / folder}: the build would ship none")
            dest = Path(self.build_lib, "zfsmon", "share", folder)
            self.mkpath(str(dest))
            for f in files:
                self.copy_file(str(f), str(dest / f.name))


setup(cmdclass={"build_py": BuildWithScripts})
