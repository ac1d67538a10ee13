"""The code sandbox's child side: run as a script (``child.py``), it loads its siblings from
this folder before confinement (``confine.py``, ``clocks.py``) and never imports the package."""
