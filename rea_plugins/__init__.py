"""First-party rea plugins; each folder is one plugin registered through the ``rea`` entry-point group."""
