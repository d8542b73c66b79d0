"""The app's static files (its .tcss stylesheet), shipped inside the wheel as ``app.assets``.

``setup.py`` maps this folder to that package: the top-level names stay ``app``, ``memory`` and
``widgets``, and the App reads its stylesheet beside this module, from a wheel as from the tree.
"""
