"""Packaging beyond what pyproject.toml can say: assets/ ships inside the wheel as ``app.assets``.

Every sub-package of the three top-level ones is found on disk (a listed package's sub-packages are
not included with it); nothing of tests/.
"""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["app", "app.*", "memory", "memory.*", "widgets", "widgets.*"]),
        "app.assets",
    ],
    package_dir={"app.assets": "assets"},
)
