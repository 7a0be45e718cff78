"""What rules know about the code they check, read from source and never imported.

``project.py`` is the ``Project`` of a run (its root, its files, and what is read
from them, once); ``declarations.py`` reads ``Literal`` and ``Protocol``
declarations; ``receivers.py`` infers what an expression is an instance of;
``ownership.py`` tells whose a name is; ``conformance.py`` finds the classes that
implement a protocol; ``consistency.py`` follows imports between modules;
``collected.py`` knows what pytest collects; ``typos.py`` runs the typos checker.
Nothing here imports the engine (a test holds this).
"""
